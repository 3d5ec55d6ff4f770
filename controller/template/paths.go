package template

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"strings"
	"text/template"
	"text/template/parse"
	"unicode/utf8"

	"github.com/cup-dev/cup/controller"
)

const (
	// maxPathLen bounds a rendered path, in bytes.
	maxPathLen = 4096
	// maxSegmentLen bounds one element of a rendered path, in bytes; longer
	// names cannot be checked out on common file systems.
	maxSegmentLen = 255
)

var funcs = template.FuncMap{
	"replace": strings.ReplaceAll,
	"lower":   strings.ToLower,
	"upper":   strings.ToUpper,
	"shard":   shard,
}

// shard names one of 256 buckets for s: two lower-case hexadecimal digits
// of the FNV-1a hash of s. It never changes for a given s, so files stay
// where they were written. Resource templates use it to fan a namespace of
// many thousands of resources out over directories, as Git does with its
// objects: a write then rewrites a tree of a few dozen entries instead of
// one entry per resource in the namespace.
func shard(s string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(s))
	return fmt.Sprintf("%02x", h.Sum32()&0xff)
}

// pathData is what the templates see.
type pathData struct {
	Group, Version, Kind, Plural, Namespace, Name string
}

// pathTemplate is a parsed, checked path template.
type pathTemplate struct {
	name string // "list_template" or "resource_template", for messages
	tmpl *template.Template
	// nameVerbatim reports that every use of .Name is a bare {{ .Name }}
	// action, so that the rendered path is the same text with the name
	// inserted at each: see [pathTemplate.nameSplitter].
	nameVerbatim bool
}

// parsePathTemplate parses src and checks that it uses only the allowed
// constructs, references every field in must and no field in mustNot.
func parsePathTemplate(name, src string, must, mustNot []string) (*pathTemplate, error) {
	t, err := template.New(name).Funcs(funcs).Option("missingkey=error").Parse(src)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(t.Templates()) > 1 {
		return nil, fmt.Errorf("%s %q: define and block are not allowed in path templates", name, src)
	}
	if t.Tree == nil || t.Root == nil {
		return nil, fmt.Errorf("%s %q: empty template", name, src)
	}
	fields := map[string]int{}
	if err := walk(t.Root, fields); err != nil {
		return nil, fmt.Errorf("%s %q: %w", name, src, err)
	}
	for _, f := range must {
		if fields[f] == 0 {
			return nil, fmt.Errorf("%s %q: must use .%s", name, src, f)
		}
	}
	for _, f := range mustNot {
		if fields[f] > 0 {
			return nil, fmt.Errorf("%s %q: must not use .%s", name, src, f)
		}
	}
	verbatim := fields["Name"] > 0 && bareNames(t.Root) == fields["Name"]
	return &pathTemplate{name: name, tmpl: t, nameVerbatim: verbatim}, nil
}

// bareNames counts the {{ .Name }} actions in the top-level list of n,
// outside if and with, whose output a bare action leaves verbatim.
func bareNames(n *parse.ListNode) int {
	count := 0
	for _, c := range n.Nodes {
		a, ok := c.(*parse.ActionNode)
		if !ok || len(a.Pipe.Decl) > 0 || len(a.Pipe.Cmds) != 1 || len(a.Pipe.Cmds[0].Args) != 1 {
			continue
		}
		if f, ok := a.Pipe.Cmds[0].Args[0].(*parse.FieldNode); ok && len(f.Ident) == 1 && f.Ident[0] == "Name" {
			count++
		}
	}
	return count
}

// nameMarker stands for the name when a template that uses it verbatim is
// rendered once for many names. It passes checkValue, and no real name
// holds it (a noncharacter).
const nameMarker = "\uFFFF"

// nameSplitter returns the path t renders for d, whose Name is ignored,
// split around the name: joined with a name, the parts give the path t
// renders for that name, when it renders one. It returns nil when t does
// not use the name verbatim, or renders no path for the marker.
func (t *pathTemplate) nameSplitter(d pathData) []string {
	if !t.nameVerbatim {
		return nil
	}
	d.Name = nameMarker
	p, err := t.render(d)
	if err != nil {
		return nil
	}
	parts := strings.Split(p, nameMarker)
	if len(parts) != bareNames(t.tmpl.Root)+1 {
		return nil // the marker came from another field too
	}
	return parts
}

// joinsTo reports whether parts joined with name make p, without building
// the joined string.
func joinsTo(parts []string, name, p string) bool {
	for i, part := range parts {
		if i > 0 {
			if !strings.HasPrefix(p, name) {
				return false
			}
			p = p[len(name):]
		}
		if !strings.HasPrefix(p, part) {
			return false
		}
		p = p[len(part):]
	}
	return p == ""
}

// walk records the data fields n references and rejects constructs that can
// loop or recurse.
func walk(n parse.Node, fields map[string]int) error {
	switch n := n.(type) {
	case nil:
		return nil
	case *parse.ListNode:
		if n == nil {
			return nil
		}
		for _, c := range n.Nodes {
			if err := walk(c, fields); err != nil {
				return err
			}
		}
	case *parse.ActionNode:
		return walk(n.Pipe, fields)
	case *parse.PipeNode:
		if n == nil {
			return nil
		}
		for _, c := range n.Cmds {
			if err := walk(c, fields); err != nil {
				return err
			}
		}
	case *parse.CommandNode:
		for _, a := range n.Args {
			if err := walk(a, fields); err != nil {
				return err
			}
		}
	case *parse.FieldNode:
		fields[n.Ident[0]]++
	case *parse.VariableNode:
		if len(n.Ident) > 1 && n.Ident[0] == "$" {
			fields[n.Ident[1]]++
		}
	case *parse.ChainNode:
		return walk(n.Node, fields)
	case *parse.IfNode:
		return walkBranch(&n.BranchNode, fields)
	case *parse.WithNode:
		return walkBranch(&n.BranchNode, fields)
	case *parse.RangeNode:
		return errors.New("range is not allowed in path templates")
	case *parse.TemplateNode:
		return errors.New("template is not allowed in path templates")
	case *parse.BreakNode, *parse.ContinueNode:
		return errors.New("break and continue are not allowed in path templates")
	}
	return nil
}

func walkBranch(b *parse.BranchNode, fields map[string]int) error {
	for _, n := range []parse.Node{b.Pipe, b.List, b.ElseList} {
		if err := walk(n, fields); err != nil {
			return err
		}
	}
	return nil
}

// render executes t with d. Values in d that could change the shape of a
// path or a glob are rejected first, as is a result that is not a clean
// relative path inside the tree. All such errors wrap controller.ErrInvalid.
func (t *pathTemplate) render(d pathData) (string, error) {
	for _, f := range []struct{ name, value string }{
		{"group", d.Group}, {"version", d.Version}, {"kind", d.Kind}, {"plural", d.Plural},
		{"namespace", d.Namespace}, {"name", d.Name},
	} {
		if err := checkValue(f.value); err != nil {
			return "", fmt.Errorf("%w: %s %q: %v", controller.ErrInvalid, f.name, f.value, err)
		}
	}
	var buf bytes.Buffer
	if err := t.tmpl.Execute(&limitWriter{w: &buf, n: maxPathLen}, d); err != nil {
		return "", fmt.Errorf("%w: rendering %s for namespace %q, name %q: %v", controller.ErrInvalid, t.name, d.Namespace, d.Name, err)
	}
	p := buf.String()
	if err := checkPath(p); err != nil {
		return "", fmt.Errorf("%w: %s renders %q for namespace %q, name %q: %v", controller.ErrInvalid, t.name, p, d.Namespace, d.Name, err)
	}
	return p, nil
}

// checkValue rejects template inputs that are not valid UTF-8 or carry
// control characters, path separators or glob syntax. Names and namespaces
// are validated before they reach a controller; this is the controller's own
// line of defence.
func checkValue(v string) error {
	if !utf8.ValidString(v) {
		return errors.New("not valid UTF-8")
	}
	for _, r := range v {
		switch {
		case r < 0x20 || r == 0x7f:
			return fmt.Errorf("control character %U", r)
		case r == '/' || r == '\\':
			return fmt.Errorf("path separator %q", r)
		case r == '*' || r == '?' || r == '[' || r == ']':
			return fmt.Errorf("glob character %q", r)
		}
	}
	return nil
}

// checkPath accepts a clean, relative, slash-separated path that stays inside
// the tree and is not Git's own directory.
func checkPath(p string) error {
	switch {
	case p == "":
		return errors.New("empty path")
	case strings.IndexByte(p, 0) >= 0:
		return errors.New("NUL byte in path")
	case strings.HasPrefix(p, "/"):
		return errors.New("absolute path")
	case !utf8.ValidString(p):
		return errors.New("not valid UTF-8")
	}
	for seg := range strings.SplitSeq(p, "/") {
		switch {
		case seg == "":
			return errors.New("empty path element")
		case seg == "." || seg == "..":
			return fmt.Errorf("path element %q", seg)
		case strings.EqualFold(seg, ".git"):
			return errors.New("path inside .git")
		case len(seg) > maxSegmentLen:
			return fmt.Errorf("path element longer than %d bytes", maxSegmentLen)
		}
	}
	if !fs.ValidPath(p) || p == "." {
		return errors.New("not a valid slash-separated relative path")
	}
	return nil
}

// limitWriter fails writes past n bytes, so that a template cannot render an
// unbounded path.
type limitWriter struct {
	w *bytes.Buffer
	n int
}

var errTooLong = fmt.Errorf("rendered path longer than %d bytes", maxPathLen)

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.w.Len()+len(p) > l.n {
		return 0, errTooLong
	}
	return l.w.Write(p)
}
