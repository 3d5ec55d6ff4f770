package template

import (
	"context"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"sync"
	"text/template"
	"text/template/parse"

	"github.com/cup-dev/cup/controller"
)

// Mapping paths back to resources: a watch learns from a commit's diff which
// files changed, and asks which resources those files keep (MapPath), and
// which namespaces exist (Namespaces), without listing anything.
//
// The resource template is rendered once per type with markers in place of
// the namespace and the name (and of shard's output), and the rendered path
// becomes a regular expression with one group for each. That is exact when
// every path element holds at most one of the two: then an element is a
// fixed prefix, one value and a fixed suffix, and the value is the only one
// that can render it. A candidate is checked by rendering it again.
// Templates that do more with the namespace or the name (lower, upper,
// replace, if) are not mapped: MapPath answers controller.ErrUnsupported
// and callers compare listings instead.

const (
	// namespaceMarker stands for the namespace, as nameMarker does for the
	// name; shardMarker for what shard returns. Noncharacters: no real
	// value holds them, and checkValue lets them through.
	namespaceMarker = "\uFFFE"
	shardMarker     = "\uFDD0"
)

var (
	_ controller.PathMapper      = (*Controller)(nil)
	_ controller.NamespaceLister = (*Controller)(nil)
)

// pathMapping is a resource template's paths for one type, as a regular
// expression.
type pathMapping struct {
	re *regexp.Regexp
	// groups says what each group of re holds: 'n' the namespace, 'm' the
	// name.
	groups []byte
	err    error // wraps controller.ErrUnsupported when the type's paths cannot be mapped
}

// mappings caches a controller's pathMapping per type.
type mappings struct {
	mu    sync.Mutex
	types map[controller.Type]*pathMapping
}

// MapPath returns the namespace and name of the resource of typ kept at p;
// see controller.PathMapper.
func (c *Controller) MapPath(typ controller.Type, p string) (namespace, name string, ok bool, err error) {
	m := c.mapping(typ)
	if m.err != nil {
		return "", "", false, m.err
	}
	sub := m.re.FindStringSubmatch(p)
	if sub == nil {
		return "", "", false, nil
	}
	for i, g := range m.groups {
		v := sub[i+1]
		switch {
		case g == 'n' && namespace == "":
			namespace = v
		case g == 'm' && name == "":
			name = v
		case g == 'n' && v != namespace, g == 'm' && v != name:
			return "", "", false, nil
		}
	}
	if want, err := c.resourcePath(typ, namespace, name); err != nil || want != p {
		return "", "", false, nil
	}
	return namespace, name, true, nil
}

// ResourcePath returns the path of the file that keeps the resource; see
// controller.PathMapper.
func (c *Controller) ResourcePath(typ controller.Type, namespace, name string) (string, error) {
	if m := c.mapping(typ); m.err != nil {
		return "", m.err
	}
	return c.resourcePath(typ, namespace, name)
}

func (c *Controller) mapping(typ controller.Type) *pathMapping {
	c.maps.mu.Lock()
	defer c.maps.mu.Unlock()
	if m, ok := c.maps.types[typ]; ok {
		return m
	}
	m := c.newMapping(typ)
	if c.maps.types == nil {
		c.maps.types = make(map[controller.Type]*pathMapping)
	}
	if len(c.maps.types) < 1024 { // types are few; never unbounded
		c.maps.types[typ] = m
	}
	return m
}

func (c *Controller) newMapping(typ controller.Type) *pathMapping {
	unsupported := func(why string) *pathMapping {
		return &pathMapping{err: fmt.Errorf("%w: resource_template %q %s", controller.ErrUnsupported, c.spec.ResourceTemplate, why)}
	}
	if !plainUses(c.resource.tmpl.Root, "Namespace", true) || !plainUses(c.resource.tmpl.Root, "Name", true) {
		return unsupported("does more with the namespace or name than insert them or shard them")
	}
	if checkRequest(typ, "x") != nil {
		return unsupported("cannot render paths for the type")
	}
	p, err := renderMarked(c.resource, pathData{typ.Group, typ.Version, typ.Kind, typ.Plural, namespaceMarker, nameMarker})
	if err != nil {
		return unsupported(err.Error())
	}
	var re strings.Builder
	var groups []byte
	re.WriteString("^")
	for i, elem := range strings.Split(p, "/") {
		if i > 0 {
			re.WriteString("/")
		}
		vars := strings.Count(elem, namespaceMarker) + strings.Count(elem, nameMarker)
		if vars > 1 {
			return unsupported("puts the namespace and the name in one path element")
		}
		for _, r := range elem {
			switch string(r) {
			case namespaceMarker:
				re.WriteString("([a-z0-9-]+)")
				groups = append(groups, 'n')
			case nameMarker:
				re.WriteString("([a-z0-9.-]+)")
				groups = append(groups, 'm')
			case shardMarker:
				re.WriteString("[0-9a-f]{2}")
			default:
				re.WriteString(regexp.QuoteMeta(string(r)))
			}
		}
	}
	re.WriteString("$")
	if !slices.Contains(groups, 'n') || !slices.Contains(groups, 'm') {
		return unsupported("does not render the namespace and the name")
	}
	compiled, err := regexp.Compile(re.String())
	if err != nil {
		return unsupported(err.Error())
	}
	return &pathMapping{re: compiled, groups: groups}
}

// renderMarked renders t for d with shard returning shardMarker.
func renderMarked(t *pathTemplate, d pathData) (string, error) {
	clone, err := t.tmpl.Clone()
	if err != nil {
		return "", err
	}
	clone.Funcs(template.FuncMap{"shard": func(string) string { return shardMarker }})
	return (&pathTemplate{name: t.name, tmpl: clone}).render(d)
}

// plainUses reports whether every use of the field in n is a bare
// {{ .Field }} action, or, with shards, {{ shard .Field }}.
func plainUses(n *parse.ListNode, field string, shards bool) bool {
	fields := map[string]int{}
	if walk(n, fields) != nil {
		return false
	}
	plain := 0
	for _, c := range n.Nodes {
		a, ok := c.(*parse.ActionNode)
		if !ok || len(a.Pipe.Decl) > 0 || len(a.Pipe.Cmds) != 1 {
			continue
		}
		args := a.Pipe.Cmds[0].Args
		if len(args) == 2 && shards {
			if id, ok := args[0].(*parse.IdentifierNode); !ok || id.Ident != "shard" {
				continue
			}
			args = args[1:]
		}
		if len(args) != 1 {
			continue
		}
		if f, ok := args[0].(*parse.FieldNode); ok && len(f.Ident) == 1 && f.Ident[0] == field {
			plain++
		}
	}
	return plain == fields[field]
}

// Namespaces returns the namespaces whose list pattern matches a file in
// fsys; see controller.NamespaceLister. It needs a list template that holds
// the namespace once, as a whole path element or between fixed text in
// one.
func (c *Controller) Namespaces(ctx context.Context, fsys fs.FS, typ controller.Type) ([]string, error) {
	unsupported := func(why string) error {
		return fmt.Errorf("%w: list_template %q %s", controller.ErrUnsupported, c.spec.ListTemplate, why)
	}
	if !plainUses(c.list.tmpl.Root, "Namespace", false) || checkRequest(typ, "x") != nil {
		return nil, unsupported("does more with the namespace than insert it")
	}
	p, err := renderMarked(c.list, pathData{typ.Group, typ.Version, typ.Kind, typ.Plural, namespaceMarker, ""})
	if err != nil {
		return nil, unsupported(err.Error())
	}
	if strings.Count(p, namespaceMarker) != 1 || strings.Contains(p, shardMarker) {
		return nil, unsupported("does not hold the namespace exactly once")
	}
	elems := strings.Split(p, "/")
	at := slices.IndexFunc(elems, func(e string) bool { return strings.Contains(e, namespaceMarker) })
	prefix, suffix, _ := strings.Cut(elems[at], namespaceMarker)
	if hasMeta(prefix) || hasMeta(suffix) {
		return nil, unsupported("has glob syntax beside the namespace")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	files, err := globFiles(fsys, strings.Replace(p, namespaceMarker, "*", 1))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range files {
		elem := strings.Split(f, "/")[at]
		ns, okPrefix := strings.CutPrefix(elem, prefix)
		ns, okSuffix := strings.CutSuffix(ns, suffix)
		if !okPrefix || !okSuffix || !dnsLabel.MatchString(ns) {
			continue
		}
		if len(out) == 0 || out[len(out)-1] != ns {
			out = append(out, ns)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// dnsLabel is what a namespace is.
var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
