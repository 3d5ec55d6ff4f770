package rbac

import (
	"github.com/cup-dev/cup/auth"
)

// GroupAuthenticated is the group every identity belongs to, whatever its
// Groups say: a binding to it grants its role to everyone who
// authenticated.
const GroupAuthenticated = "system:authenticated"

// wildcard in apiGroups, resources or verbs matches every value.
const wildcard = "*"

// Policy is a loaded set of roles and bindings, indexed for [Policy.Allowed].
// It is immutable and safe for concurrent use. A nil *Policy denies
// everything.
type Policy struct {
	users  map[string]*grants
	groups map[string]*grants
	// roles and bindings count what was loaded, for logs.
	roles, bindings int
}

var _ auth.Authorizer = (*Policy)(nil)

// verbSet is a set of verbs, one bit each.
type verbSet uint8

const (
	verbGet verbSet = 1 << iota
	verbList
	verbWatch
	verbPut
	verbDelete

	allVerbs = verbGet | verbList | verbWatch | verbPut | verbDelete
	// namedVerbs are what a rule with resourceNames can grant: verbs on
	// one resource. A watch is of one resource when it names one.
	namedVerbs = verbGet | verbWatch | verbPut | verbDelete
)

// verbOf returns the bit of one of auth's verbs, or 0.
func verbOf(verb string) verbSet {
	switch verb {
	case auth.VerbGet:
		return verbGet
	case auth.VerbList:
		return verbList
	case auth.VerbWatch:
		return verbWatch
	case auth.VerbPut:
		return verbPut
	case auth.VerbDelete:
		return verbDelete
	}
	return 0
}

// grantKey says where a grant applies: a namespace ("" for every namespace
// and for resources without one, as bound by a ClusterRoleBinding), a
// group and a plural, either of which may be the wildcard.
type grantKey struct {
	namespace, group, plural string
}

// grant is what one subject may do at one grantKey.
type grant struct {
	// verbs are granted on every resource.
	verbs verbSet
	// named are granted on the named resources only; nil if none.
	named map[string]verbSet
}

// shape bits say which kinds of grantKey a subject has, so that Allowed
// looks up only those: cluster-wide or not, wildcard group or not,
// wildcard plural or not.
const (
	shapeWildPlural = 1 << iota
	shapeWildGroup
	shapeCluster
	shapeCount = 1 << iota
)

// grants are everything one subject (a user or a group) is granted.
type grants struct {
	byKey map[grantKey]*grant
	// shapes has bit s set when byKey holds a key of shape s.
	shapes uint8
	// visible holds group/plural pairs (either may be the wildcard) on
	// which some verb is granted somewhere.
	visible map[[2]string]bool
}

func newGrants() *grants {
	return &grants{byKey: map[grantKey]*grant{}, visible: map[[2]string]bool{}}
}

// add grants r's rules in namespace ("" for cluster-wide).
func (g *grants) add(namespace string, r *rule) {
	verbs := r.verbs
	if len(r.names) > 0 {
		verbs &= namedVerbs
	}
	if verbs == 0 {
		return // a rule with resourceNames that lists nothing but list
	}
	for _, group := range r.groups {
		for _, plural := range r.plurals {
			k := grantKey{namespace: namespace, group: group, plural: plural}
			gr := g.byKey[k]
			if gr == nil {
				gr = &grant{}
				g.byKey[k] = gr
			}
			if len(r.names) == 0 {
				gr.verbs |= verbs
			} else {
				if gr.named == nil {
					gr.named = map[string]verbSet{}
				}
				for _, n := range r.names {
					gr.named[n] |= verbs
				}
			}
			var shape uint8
			if namespace == "" {
				shape |= shapeCluster
			}
			if group == wildcard {
				shape |= shapeWildGroup
			}
			if plural == wildcard {
				shape |= shapeWildPlural
			}
			g.shapes |= 1 << shape
			g.visible[[2]string{group, plural}] = true
		}
	}
}

// allows reports whether g grants verb v on the resource a describes.
func (g *grants) allows(v verbSet, a *auth.Attributes) bool {
	for shape := range uint8(shapeCount) {
		if g.shapes&(1<<shape) == 0 {
			continue
		}
		k := grantKey{namespace: a.Namespace, group: a.Group, plural: a.Plural}
		if shape&shapeCluster != 0 {
			k.namespace = ""
		} else if a.Namespace == "" {
			continue // only cluster-wide grants cover resources without a namespace
		}
		if shape&shapeWildGroup != 0 {
			k.group = wildcard
		}
		if shape&shapeWildPlural != 0 {
			k.plural = wildcard
		}
		gr := g.byKey[k]
		if gr == nil {
			continue
		}
		if gr.verbs&v != 0 {
			return true
		}
		if gr.named != nil && a.Name != "" && v&namedVerbs != 0 && gr.named[a.Name]&v != 0 {
			return true
		}
	}
	return false
}

// sees reports whether g grants anything on group and plural.
func (g *grants) sees(group, plural string) bool {
	return g.visible[[2]string{group, plural}] || g.visible[[2]string{wildcard, plural}] ||
		g.visible[[2]string{group, wildcard}] || g.visible[[2]string{wildcard, wildcard}]
}

// subjects calls f with the grants of each subject id matches, until f
// returns true, and reports whether it did.
func (p *Policy) subjects(id *auth.Identity, f func(*grants) bool) bool {
	if p == nil || id == nil {
		return false
	}
	if g := p.users[id.User]; g != nil && f(g) {
		return true
	}
	for _, name := range id.Groups {
		if g := p.groups[name]; g != nil && name != GroupAuthenticated && f(g) {
			return true
		}
	}
	if g := p.groups[GroupAuthenticated]; g != nil && f(g) {
		return true
	}
	return false
}

// Allowed implements [auth.Authorizer]: it reports whether a rule bound to
// id, to one of its groups or to [GroupAuthenticated] grants what a
// describes (see the package documentation). Unknown verbs and a nil
// identity are denied.
func (p *Policy) Allowed(id *auth.Identity, a auth.Attributes) bool {
	v := verbOf(a.Verb)
	if v == 0 {
		return false
	}
	return p.subjects(id, func(g *grants) bool { return g.allows(v, &a) })
}

// Visible implements [auth.Authorizer]: it reports whether some rule bound
// to id grants some verb on resources of group and plural, in some
// namespace or on some names.
func (p *Policy) Visible(id *auth.Identity, group, plural string) bool {
	return p.subjects(id, func(g *grants) bool { return g.sees(group, plural) })
}

// newPolicy indexes the bindings, whose roles are all resolved.
func newPolicy(roles map[roleKey]*role, bindings []*binding) *Policy {
	p := &Policy{
		users:    map[string]*grants{},
		groups:   map[string]*grants{},
		roles:    len(roles),
		bindings: len(bindings),
	}
	for _, b := range bindings {
		r := roles[b.roleKey()]
		namespace := "" // a ClusterRoleBinding's
		if b.kind == kindRoleBinding {
			namespace = b.namespace
		}
		for _, s := range b.subjects {
			m := p.users
			if s.Kind == subjectGroup {
				m = p.groups
			}
			g := m[s.Name]
			if g == nil {
				g = newGrants()
				m[s.Name] = g
			}
			for i := range r.rules {
				g.add(namespace, &r.rules[i])
			}
		}
	}
	return p
}
