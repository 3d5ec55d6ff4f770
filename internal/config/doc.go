// Package config loads cup's configuration resources: the API types cup
// serves (ResourceDefinition), the controllers that map them to files
// (Controller) and the bindings between the two (APIBinding).
//
// # Where configuration comes from
//
// [Load] reads every resource below a directory of an [fs.FS], recursively, so
// the same code serves an OS directory ([os.DirFS]), an embedded file system
// and the .cup/ directory of a Git commit's tree. Files ending in .json, .yaml
// or .yml are read; other files, and files or directories whose name starts
// with a dot (below the directory passed in), are skipped. A YAML file may
// hold several documents separated by "---" lines; a JSON file holds one
// resource or a JSON array of resources. Empty YAML documents are ignored.
// YAML is read as YAML 1.1, as Kubernetes does: quote strings such as yes,
// no, on and off, which are booleans otherwise.
//
// [Parse] reads the same way but leaves references between resources
// unchecked, for a part of the configuration that [Set.Merge] completes later,
// e.g. the server's configuration directory plus the repository's .cup/.
//
// # Accepted shapes
//
// apiVersion is "cup.dev/v1alpha1" (ours) or "cup.flipt.io/v1alpha1" (the
// original Cup, whose files load unchanged). Every resource has
// metadata.name and may have metadata.labels and metadata.annotations
// (string maps, kept for documentation only). Unknown fields, wrong JSON types
// and duplicate keys are errors, so typos do not go unnoticed.
//
// ResourceDefinition:
//
//	apiVersion: cup.dev/v1alpha1
//	kind: ResourceDefinition
//	metadata:
//	  name: flags.flipt.io        # conventionally <plural>.<group>
//	spec:
//	  group: flipt.io             # DNS subdomain
//	  names:                      # may instead sit at the top level (original Cup); not both
//	    kind: Flag                # UpperCamelCase
//	    singular: flag            # lowercase DNS label
//	    plural: flags             # lowercase DNS label, used in URLs
//	    shortNames: [fl]          # optional, lowercase DNS labels
//	  versions:                   # at least one; keys are DNS labels, e.g. v1alpha1
//	    v1alpha1:
//	      schemaTarget: spec      # optional: spec | resource (see below)
//	      schema:                 # a JSON Schema, draft 2020-12 unless $schema says otherwise
//	        type: object
//	        properties:
//	          enabled: {type: boolean}
//	      additionalPrinterColumns:  # optional: columns cup get shows, as a CRD's
//	      - name: Enabled         # required, unique in the version (case-insensitively)
//	        type: boolean         # integer | number | string | boolean | date
//	        jsonPath: .spec.enabled  # a JSONPath starting with a dot
//	        description: Whether the flag is on.  # optional
//	        priority: 0           # optional: 0 always, more only with -o wide
//	        format: ""            # optional, as OpenAPI's
//
// With apiVersion cup.flipt.io/v1alpha1 each entry of spec.versions is the
// JSON Schema itself (no schema/schemaTarget wrapper), as in the original Cup:
//
//	{"apiVersion": "cup.flipt.io/v1alpha1", "kind": "ResourceDefinition",
//	 "metadata": {"name": "flags.flipt.io"},
//	 "names": {"kind": "Flag", "singular": "flag", "plural": "flags"},
//	 "spec": {"group": "flipt.io", "versions": {"v1alpha1": {"type": "object"}}}}
//
// A version's schema describes either the resource's spec or the whole
// resource (apiVersion, kind, metadata, spec); see [SchemaTarget]. Unless
// schemaTarget says so explicitly, a schema describes the whole resource when
// its top-level "properties" has a "spec" key, and the spec otherwise.
// Schemas must be self-contained: $ref may point only inside the same schema,
// never to a file or URL. Formats ("format": "date-time", ...) are asserted.
//
// Controller:
//
//	apiVersion: cup.dev/v1alpha1
//	kind: Controller
//	metadata:
//	  name: flipt
//	spec:
//	  type: wasm                  # template | wasm
//	  spec:                       # optional object; its fields belong to the controller type
//	    path: flipt.wasm
//
// The loader checks only that spec.type is known, by asking
// registry.Controllers (the built-in types register in internal/kinds), and
// that spec.spec is an object; the controller packages decode spec.spec
// ([Controller.Spec]).
//
// APIBinding (kind Binding is accepted as an alias, as in the original Cup):
//
//	apiVersion: cup.dev/v1alpha1
//	kind: APIBinding
//	metadata:
//	  name: flags
//	spec:
//	  controller: flipt           # a Controller's metadata.name
//	  resources:                  # at least one "<group>/<version>/<plural>"
//	  - flipt.io/v1alpha1/flags
//
// Reconciler (package runtime runs it):
//
//	apiVersion: cup.dev/v1alpha1
//	kind: Reconciler
//	metadata:
//	  name: flag-bundles
//	spec:
//	  for: flags.cup.dev/v1alpha1/bundles      # the primary type
//	  watches:                                 # inputs, each with a mapper
//	  - resource: flags.cup.dev/v1alpha1/flags
//	    map: {kind: selector, path: spec.selector}  # nameAligned | owner (key) | selector | reference | referencedBy (path)
//	  outputs:                                 # at least one
//	  - resource: flags.cup.dev/v1alpha1/flagbundles
//	    ownership: exclusive                   # exclusive (default) | shared
//	  transform:
//	    wasm: {path: flagbundle.wasm, timeout: 5s}  # as a WASM Controller's spec; relative to this file
//	  write:
//	    mode: direct                           # direct | proposal; unset: as cupd writes
//	    batchWindow: 1s                        # optional: gather primaries into one commit
//	    maxWritesPerMinute: 120                # optional: pause a runaway
//
// # Checks
//
// Besides the shape of each document, loading checks that names are unique
// (definitions by metadata.name, by group and plural and by group and kind;
// controllers and bindings by name), that every schema compiles, and that
// each binding names a known controller and known definitions and versions,
// with no group/version/plural bound twice, and that each reconciler names
// known definitions and versions. All problems are reported at
// once in an [*Error], each naming the file and, for files holding several
// resources, the document.
//
// # Concurrency
//
// A [Set] and everything reachable from it must not be modified once
// returned; it is then safe for concurrent use, including [Version.Validate].
package config
