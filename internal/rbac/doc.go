// Package rbac authorizes API calls with Kubernetes-style roles and
// bindings: a [Policy], or a [File] that reloads one, implements
// [auth.Authorizer].
//
// # Policy files
//
// [Load] reads a policy from one file, or from every file directly in a
// directory (not in its subdirectories) whose name ends in .yaml, .yml or
// .json and does not start with a dot, in name order (links are followed,
// as in a mounted Kubernetes ConfigMap). A file whose name ends in .json
// holds one resource or an array of resources; any other file is YAML, and
// may hold several documents separated by "---" lines. YAML is read as
// YAML 1.1, as Kubernetes does: quote names such as yes, no, on and off,
// which are booleans otherwise.
//
// Every resource has apiVersion cup.dev/v1alpha1 and one of four kinds,
// laid out as in Kubernetes (rules, subjects and roleRef at the top level):
//
//	apiVersion: cup.dev/v1alpha1
//	kind: Role                      # or ClusterRole, which has no namespace
//	metadata:
//	  name: flag-editor
//	  namespace: production         # required for Role and RoleBinding, not allowed otherwise
//	rules:                          # at least one
//	- apiGroups: ["flipt.io"]       # "*" for every group
//	  resources: ["flags"]          # plurals; "*" for every resource
//	  verbs: ["get", "list", "put"] # get, list, watch, put, delete; "*" for all
//	  resourceNames: ["checkout"]   # optional: only these resources
//	---
//	apiVersion: cup.dev/v1alpha1
//	kind: RoleBinding               # or ClusterRoleBinding, which has no namespace
//	metadata:
//	  name: flag-editors
//	  namespace: production
//	subjects:                       # at least one
//	- kind: Group                   # User or Group
//	  name: flag-admins
//	roleRef:
//	  kind: Role                    # a Role in the binding's namespace, or a ClusterRole
//	  name: flag-editor
//
// metadata may also hold labels and annotations (string maps, for
// documentation only). The verb put both creates and updates a resource;
// there is no create, update or patch. Unlike Kubernetes, subjects and
// roleRef take no apiGroup, and subjects are users and groups only.
//
// # Decisions
//
// Everything is denied unless a rule bound to the caller grants it. A
// policy without any binding is valid, and denies every request.
//
// A rule matches a request when its apiGroups hold the request's group or
// "*", its resources the plural or "*", its verbs the verb or "*", and,
// when the rule has resourceNames, when the request names one of them. A
// rule with resourceNames grants only get, put, delete and watch of one
// named resource: never list, nor a watch of every resource of a type.
//
// Where a rule applies depends on its binding. A RoleBinding grants its
// Role's rules, or its ClusterRole's, in the binding's namespace only. A
// ClusterRoleBinding grants its ClusterRole's rules in every namespace and
// on resources that have no namespace (such as cup's own cup.dev
// proposals), which nothing else grants.
//
// A subject of kind User matches an identity whose User is its name, and
// one of kind Group an identity that has the group in its Groups, exactly
// (case matters). Every identity also belongs to the group
// [GroupAuthenticated], to grant something to everyone who authenticated.
//
// # Checks
//
// Load checks the whole policy and reports every problem at once in an
// [*Error], each with its file, line and field, e.g.
//
//	policy.yaml:9: Role "production/flag-editor": rules[0].verbs[1]: unknown verb "patch" (want get, list, watch, put, delete or "*"; put creates and updates)
//
// It rejects unknown apiVersions, kinds and fields; missing names and
// namespaces, and namespaces on cluster-wide kinds; empty apiGroups,
// resources and verbs, and unknown verbs; subjects other than User and
// Group, or without a name; roleRefs to roles that are not defined (a
// RoleBinding's Role must be in the binding's namespace) and
// ClusterRoleBindings that refer to a Role; and names defined twice for a
// kind in a namespace. Namespaces must be DNS labels and resourceNames DNS
// subdomains, as in the API, so that a typo does not go unnoticed.
//
// # Reloading
//
// A [File] holds the policy loaded from a path and reloads it: on demand
// with [File.Reload] (for a SIGHUP), or with [File.Run], which polls the
// files for changes. A policy that fails to load never replaces the one in
// force; Reload returns the error and Run logs it (see [WithLogger]).
//
// # Concurrency
//
// A Policy is immutable once loaded; Policy and File are safe for
// concurrent use. Allowed does a few map lookups per subject the caller
// matches, and neither I/O nor allocation.
package rbac
