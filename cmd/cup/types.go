package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/internal/document"
)

// typeRef is a resolved type: its definition and the version used.
type typeRef struct {
	def     *cupv1alpha1.ResourceDefinition
	version string
}

func (t typeRef) group() string  { return t.def.GetGroup() }
func (t typeRef) plural() string { return t.def.GetNames().GetPlural() }

// qualified is plural.group, the form -o name and write results print.
func (t typeRef) qualified() string { return t.plural() + "." + t.group() }

func (t typeRef) apiVersion() string { return t.group() + "/" + t.version }

// definitions lists the served types, once per invocation.
func (c *cli) definitions(ctx context.Context) ([]*cupv1alpha1.ResourceDefinition, error) {
	if c.defs != nil {
		return c.defs, nil
	}
	conn, err := c.connect()
	if err != nil {
		return nil, err
	}
	res, err := conn.discovery.ListDefinitions(ctx, connect.NewRequest(&cupv1alpha1.ListDefinitionsRequest{}))
	if err != nil {
		return nil, err
	}
	c.defs = res.Msg.GetDefinitions()
	return c.defs, nil
}

// matches reports whether name (lower case) names def: its plural, singular,
// kind or a short name, alone or followed by "." and the group.
func matches(def *cupv1alpha1.ResourceDefinition, name string) bool {
	n := def.GetNames()
	forms := append([]string{n.GetPlural(), n.GetSingular(), strings.ToLower(n.GetKind())}, n.GetShortNames()...)
	for _, f := range forms {
		f = strings.ToLower(f)
		if f != "" && (name == f || name == f+"."+def.GetGroup()) {
			return true
		}
	}
	return false
}

// lookupType finds the types name may mean.
func lookupType(defs []*cupv1alpha1.ResourceDefinition, name string) []*cupv1alpha1.ResourceDefinition {
	name = strings.ToLower(name)
	var out []*cupv1alpha1.ResourceDefinition
	for _, d := range defs {
		if matches(d, name) {
			out = append(out, d)
		}
	}
	return out
}

// resolveType resolves TYPE by plural, singular, kind or short name,
// optionally qualified by group.
func (c *cli) resolveType(ctx context.Context, name string) (typeRef, error) {
	defs, err := c.definitions(ctx)
	if err != nil {
		return typeRef{}, err
	}
	return chooseType(name, lookupType(defs, name))
}

// chooseType makes the typeRef of name from the types lookupType found for
// it: an error unless there is exactly one.
func chooseType(name string, found []*cupv1alpha1.ResourceDefinition) (typeRef, error) {
	switch len(found) {
	case 0:
		return typeRef{}, fmt.Errorf("the server has no resource type %q (see cup api-resources)", name)
	case 1:
		return newTypeRef(found[0], "")
	}
	var names []string
	for _, d := range found {
		names = append(names, d.GetNames().GetPlural()+"."+d.GetGroup())
	}
	return typeRef{}, fmt.Errorf("resource type %q is ambiguous: it may be %s; name one with its group", name, strings.Join(names, ", "))
}

// newTypeRef picks version, or the definition's first one when empty.
func newTypeRef(def *cupv1alpha1.ResourceDefinition, version string) (typeRef, error) {
	for _, v := range def.GetVersions() {
		if version == "" || v.GetName() == version {
			return typeRef{def: def, version: v.GetName()}, nil
		}
	}
	if version == "" {
		return typeRef{}, fmt.Errorf("resource type %s.%s has no version", def.GetNames().GetPlural(), def.GetGroup())
	}
	return typeRef{}, fmt.Errorf("resource type %s.%s has no version %q", def.GetNames().GetPlural(), def.GetGroup(), version)
}

// typeOf resolves a resource's apiVersion and kind.
func (c *cli) typeOf(ctx context.Context, r *cupv1alpha1.Resource) (typeRef, error) {
	group, version, ok := strings.Cut(r.GetApiVersion(), "/")
	if !ok || group == "" || version == "" || r.GetKind() == "" {
		return typeRef{}, fmt.Errorf("resource %q: apiVersion must be group/version and kind must be set", r.GetMetadata().GetName())
	}
	defs, err := c.definitions(ctx)
	if err != nil {
		return typeRef{}, err
	}
	for _, d := range defs {
		if d.GetGroup() == group && d.GetNames().GetKind() == r.GetKind() {
			return newTypeRef(d, version)
		}
	}
	return typeRef{}, fmt.Errorf("the server has no kind %s in %s (see cup api-resources)", r.GetKind(), r.GetApiVersion())
}

// completeTypes completes TYPE with the plurals the server serves, then
// NAME with the names of that type in the namespace.
func (c *cli) completeTypes(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return c.completeNames(cmd.Context(), args[0])
	}
	defs, err := c.definitions(cmd.Context())
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	var out []string
	for _, d := range defs {
		out = append(out, d.GetNames().GetPlural())
	}
	slices.Sort(out)
	return slices.Compact(out), cobra.ShellCompDirectiveNoFileComp
}

// resourceObject is a resource's file form as a generic JSON value, its
// numbers as written. A resource whose spec came as spec_json (numbers a
// float64 cannot hold) has it as its spec, exactly.
func resourceObject(r proto.Message) (map[string]any, error) {
	b, err := protojson.Marshal(r)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if res, ok := r.(*cupv1alpha1.Resource); ok && res.GetSpecJson() != "" {
		delete(m, "specJson")
		m["spec"] = json.RawMessage(res.GetSpecJson())
	}
	return m, nil
}

// unmarshalResource decodes a resource from its JSON file form. A spec
// with a number that a float64 cannot hold exactly is sent as spec_json,
// as written; others as spec, which every cupd reads. A top-level status
// (what cup get prints of a reconciler's primary) is left out: the server
// derives it and never writes it.
func unmarshalResource(b []byte, r *cupv1alpha1.Resource) error {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err == nil {
		_, status := top["status"]
		spec, hasSpec := top["spec"]
		inexact := hasSpec && document.HasInexactNumber(spec)
		if status || inexact {
			delete(top, "status")
			if inexact {
				delete(top, "spec")
			}
			rest, err := json.Marshal(top)
			if err != nil {
				return err
			}
			if err := protojson.Unmarshal(rest, r); err != nil {
				return err
			}
			if inexact {
				var compact bytes.Buffer
				if err := json.Compact(&compact, spec); err != nil {
					return err
				}
				r.SpecJson = compact.String()
			}
			return nil
		}
	}
	return protojson.Unmarshal(b, r)
}

// encode writes v as indented JSON or as YAML.
func encode(w io.Writer, v any, format string) error {
	b, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		return err
	}
	if format == "yaml" {
		// YAML holds a number as an int64, a uint64 or a float64: one
		// that none holds exactly is refused, never printed rounded.
		if path, found := document.InexactInYAML(b); found {
			return fmt.Errorf("YAML cannot hold the number at %s exactly: use JSON (-o json)", path)
		}
		if b, err = document.JSONToYAML(b); err != nil {
			return err
		}
	} else {
		b = append(b, '\n')
	}
	_, err = w.Write(b)
	return err
}

// readResources reads the resources of -f: a file, a directory (recursively,
// .json, .yaml and .yml files) or "-" for stdin.
func (c *cli) readResources(paths []string) ([]*cupv1alpha1.Resource, error) {
	if len(paths) == 0 {
		return nil, errors.New("-f is required: a file, a directory or - for stdin")
	}
	var out []*cupv1alpha1.Resource
	for _, p := range paths {
		if p == "-" {
			b, err := io.ReadAll(c.stdin)
			if err != nil {
				return nil, err
			}
			rs, err := parseResources("stdin", b)
			if err != nil {
				return nil, err
			}
			out = append(out, rs...)
			continue
		}
		info, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			b, err := os.ReadFile(p)
			if err != nil {
				return nil, err
			}
			rs, err := parseResources(p, b)
			if err != nil {
				return nil, err
			}
			out = append(out, rs...)
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			switch filepath.Ext(path) {
			case ".json", ".yaml", ".yml":
			default:
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			rs, err := parseResources(path, b)
			out = append(out, rs...)
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no resources found in " + strings.Join(paths, ", "))
	}
	return out, nil
}

// parseResources reads JSON (one resource or an array) or YAML (documents
// separated by ---; a kind: List's items are read too). Both are read
// strictly, as cupd reads its own files: a key set twice is an error, which
// names the line.
func parseResources(name string, b []byte) ([]*cupv1alpha1.Resource, error) {
	// A document is one JSON value of the file, numbered from 1 with its
	// line, for messages.
	type doc struct {
		data []byte
		n    int
		line int
	}
	var docs []doc
	// JSON is read as JSON, not as the YAML it also is, which would refuse
	// strings holding characters such as DEL that JSON may hold unescaped.
	// A "{" that does not start valid JSON starts a YAML flow mapping.
	if t := bytes.TrimSpace(b); len(t) > 0 && (t[0] == '[' || (t[0] == '{' && json.Valid(t))) {
		var items []json.RawMessage
		if t[0] == '{' {
			items = []json.RawMessage{t}
		} else if err := json.Unmarshal(t, &items); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if loc, dups := document.ScanJSON(t); len(dups) > 0 {
			return nil, fmt.Errorf("%s: line %d: duplicate key %q", name, loc.Line(document.ParentPath(dups[0])), dups[0])
		}
		for i, it := range items {
			docs = append(docs, doc{data: it, n: i + 1})
		}
	} else {
		for i, d := range document.SplitYAML(b) {
			j, err := d.JSON()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			if j != nil {
				docs = append(docs, doc{data: j, n: i + 1, line: d.Line})
			}
		}
	}
	var out []*cupv1alpha1.Resource
	for _, d := range docs {
		where := fmt.Sprintf("%s: document %d", name, d.n)
		if d.line > 0 {
			where = fmt.Sprintf("%s: document %d (line %d)", name, d.n, d.line)
		}
		var list struct {
			Kind  string            `json:"kind"`
			Items []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(d.data, &list); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		items := []json.RawMessage{d.data}
		if list.Kind == "List" {
			items = list.Items
		}
		for _, it := range items {
			var r cupv1alpha1.Resource
			if err := unmarshalResource(it, &r); err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			out = append(out, &r)
		}
	}
	return out, nil
}

// describeResult is one line about a write: unchanged, committed <commit>,
// proposed <url> or dry run: N files.
func describeResult(res *cupv1alpha1.WriteResult) string {
	switch res.GetOutcome() {
	case cupv1alpha1.WriteOutcome_WRITE_OUTCOME_UNCHANGED:
		return "unchanged"
	case cupv1alpha1.WriteOutcome_WRITE_OUTCOME_DRY_RUN:
		if n := len(res.GetChanges()); n != 1 {
			return fmt.Sprintf("dry run: %d files", n)
		}
		return "dry run: 1 file"
	}
	if p := res.GetProposal(); p != nil {
		return "proposed " + p.GetUrl()
	}
	if res.GetOutcome() == cupv1alpha1.WriteOutcome_WRITE_OUTCOME_COMMITTED {
		s := "committed " + short(res.GetCommit())
		if res.GetReplayed() {
			s += " (replayed)"
		}
		return s
	}
	return res.GetOutcome().String()
}

func short(commit string) string {
	if len(commit) > 7 {
		return commit[:7]
	}
	return commit
}

func (c *cli) completeNames(ctx context.Context, typ string) ([]string, cobra.ShellCompDirective) {
	t, err := c.resolveType(ctx, typ)
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	conn, err := c.connect()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	res, err := conn.resources.List(ctx, connect.NewRequest(&cupv1alpha1.ListRequest{
		Group: t.group(), Version: t.version, Plural: t.plural(), Namespace: conn.namespace,
	}))
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	var out []string
	for _, r := range res.Msg.GetItems() {
		out = append(out, r.GetMetadata().GetName())
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
