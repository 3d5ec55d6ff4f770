package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"
	"golang.org/x/sync/errgroup"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/util/jsonpath"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
)

// Tables of resources, as kubectl prints them: NAME, the type's printer
// columns (additionalPrinterColumns), AGE. JSONPath is client-go's
// util/jsonpath, the implementation kubectl uses; values are read from
// the resource decoded with json.Number, so that numbers print and sort
// exactly as written.

// none is what a cell without a value shows, as kubectl shows it.
const none = "<none>"

// column is one column of a table of resources: a JSONPath into the
// resource, or one of cup's own (path nil).
type column struct {
	heading string
	typ     string // a printer column's type: date values print as ages
	path    *jsonpath.JSONPath
}

// tableSpec says which columns a table of resources of one type has.
type tableSpec struct {
	all        bool     // across namespaces: NAMESPACE first
	wide       bool     // -o wide
	showLabels bool     // a LABELS column (always with -o wide)
	labelCols  []string // -L: a column per label key
	age        bool     // an AGE column (cup get); a watch shows RESOURCE VERSION instead
	// custom are -o custom-columns: they replace every other column.
	custom []column
	// printer are the type's printer columns shown.
	printer []column
	// now is the clock date columns are measured by.
	now func() time.Time
}

// tableFlags are the flags of cup get that shape its tables.
type tableFlags struct {
	showLabels bool
	labelCols  []string
	sortBy     string
}

// relaxedPath makes a JSONPath template of what kubectl accepts as one:
// ".spec.x", "spec.x" or "{.spec.x}".
func relaxedPath(p string) string {
	p = strings.TrimSpace(p)
	if strings.HasPrefix(p, "{") {
		return p
	}
	if !strings.HasPrefix(p, ".") {
		p = "." + p
	}
	return "{" + p + "}"
}

// parsePath parses a JSONPath for a column or a sort, as kubectl reads it.
func parsePath(what, p string) (*jsonpath.JSONPath, error) {
	jp := jsonpath.New(what).AllowMissingKeys(true)
	if err := jp.Parse(relaxedPath(p)); err != nil {
		return nil, fmt.Errorf("%s: %q is not a JSONPath: %w", what, p, err)
	}
	return jp, nil
}

// customColumns parses -o custom-columns=HEADER:PATH,...
func customColumns(spec string) ([]column, error) {
	if spec == "" {
		return nil, errors.New("-o custom-columns= needs at least one HEADER:JSONPATH, e.g. NAME:.metadata.name,ROLLOUT:.spec.rollout")
	}
	var cols []column
	for _, part := range strings.Split(spec, ",") {
		heading, path, ok := strings.Cut(part, ":")
		if !ok || heading == "" || path == "" {
			return nil, fmt.Errorf("-o custom-columns: %q is not HEADER:JSONPATH, e.g. ROLLOUT:.spec.rollout", part)
		}
		jp, err := parsePath("-o custom-columns", path)
		if err != nil {
			return nil, err
		}
		cols = append(cols, column{heading: heading, path: jp})
	}
	return cols, nil
}

// newTableSpec is the table of resources of t that output (table, wide
// or custom-columns=...) prints.
func (c *cli) newTableSpec(t typeRef, output string, all bool, tf tableFlags, age bool) (*tableSpec, error) {
	s := &tableSpec{now: c.now, all: all, wide: output == "wide", showLabels: tf.showLabels || output == "wide", labelCols: tf.labelCols, age: age}
	if spec, ok := strings.CutPrefix(output, "custom-columns="); ok {
		cols, err := customColumns(spec)
		if err != nil {
			return nil, err
		}
		s.custom = cols
		return s, nil
	}
	for _, v := range t.def.GetVersions() {
		if v.GetName() != t.version {
			continue
		}
		for _, pc := range v.GetAdditionalPrinterColumns() {
			if pc.GetPriority() > 0 && !s.wide {
				continue
			}
			jp, err := parsePath(t.qualified()+" printer column "+pc.GetName(), pc.GetJsonPath())
			if err != nil {
				return nil, err
			}
			s.printer = append(s.printer, column{heading: strings.ToUpper(pc.GetName()), typ: pc.GetType(), path: jp})
		}
	}
	return s, nil
}

// header is the table's first row.
func (s *tableSpec) header() []string {
	if s.custom != nil {
		var row []string
		for _, c := range s.custom {
			row = append(row, c.heading)
		}
		return row
	}
	var row []string
	if s.all {
		row = append(row, "NAMESPACE")
	}
	row = append(row, "NAME")
	for _, c := range s.printer {
		row = append(row, c.heading)
	}
	if s.age {
		row = append(row, "AGE")
	}
	if !s.age || s.wide {
		row = append(row, "RESOURCE VERSION")
	}
	if s.wide && !s.all {
		row = append(row, "NAMESPACE")
	}
	for _, k := range s.labelCols {
		row = append(row, strings.ToUpper(labelHeading(k)))
	}
	if s.showLabels {
		row = append(row, "LABELS")
	}
	return row
}

// labelHeading is the heading of -L key: the key's name without its
// prefix, as kubectl shows it.
func labelHeading(key string) string {
	if i := strings.LastIndex(key, "/"); i >= 0 {
		return key[i+1:]
	}
	return key
}

// row is the row of r, with name in the NAME column and age in AGE.
func (s *tableSpec) row(r *cupv1alpha1.Resource, name, age string) ([]string, error) {
	now := s.now()
	var obj any
	if s.custom != nil || s.printer != nil {
		var err error
		if obj, err = plainObject(r); err != nil {
			return nil, err
		}
	}
	if s.custom != nil {
		var row []string
		for _, c := range s.custom {
			cell, err := c.cell(obj, now)
			if err != nil {
				return nil, err
			}
			row = append(row, cell)
		}
		return row, nil
	}
	md := r.GetMetadata()
	var row []string
	if s.all {
		row = append(row, md.GetNamespace())
	}
	row = append(row, name)
	for _, c := range s.printer {
		cell, err := c.cell(obj, now)
		if err != nil {
			return nil, err
		}
		row = append(row, cell)
	}
	if s.age {
		row = append(row, age)
	}
	if !s.age || s.wide {
		row = append(row, short(md.GetResourceVersion()))
	}
	if s.wide && !s.all {
		row = append(row, md.GetNamespace())
	}
	for _, k := range s.labelCols {
		row = append(row, md.GetLabels()[k])
	}
	if s.showLabels {
		row = append(row, formatLabels(md.GetLabels()))
	}
	return row, nil
}

// cell is the column's value in obj: its values joined by commas, <none>
// when it has none. Numbers print as written; a date column's value
// prints as its age, as kubectl prints it.
func (c column) cell(obj any, now time.Time) (string, error) {
	vals, err := values(c.path, obj)
	if err != nil {
		return "", fmt.Errorf("column %s: %w", c.heading, err)
	}
	var parts []string
	for _, v := range vals {
		text, err := valueText(v)
		if err != nil {
			return "", err
		}
		if c.typ == "date" {
			if t, err := time.Parse(time.RFC3339, text); err == nil {
				text = duration.HumanDuration(now.Sub(t))
			}
		}
		parts = append(parts, text)
	}
	if len(parts) == 0 {
		return none, nil
	}
	return strings.Join(parts, ","), nil
}

// values are what jp finds in obj.
func values(jp *jsonpath.JSONPath, obj any) ([]any, error) {
	results, err := jp.FindResults(obj)
	if err != nil {
		return nil, err
	}
	var out []any
	for _, rs := range results {
		for _, r := range rs {
			if !r.IsValid() {
				continue
			}
			if r.CanInterface() {
				out = append(out, r.Interface())
			}
		}
	}
	return out, nil
}

// valueText is a value as a cell shows it: strings and numbers as they
// are, objects and arrays as JSON.
func valueText(v any) (string, error) {
	switch v := v.(type) {
	case nil:
		return none, nil
	case string:
		return v, nil
	case json.Number:
		return v.String(), nil
	case bool:
		return strconv.FormatBool(v), nil
	}
	b, err := json.Marshal(v)
	return string(b), err
}

// plainObject is r in its file form, decoded with json.Number: what
// JSONPath reads.
func plainObject(r proto.Message) (any, error) {
	m, err := resourceObject(r)
	if err != nil {
		return nil, err
	}
	return plain(m)
}

// plain decodes v's JSON form with json.Number, so that JSONPath can
// walk it (json.RawMessage included) and numbers stay exact.
func plain(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out any
	err = dec.Decode(&out)
	return out, err
}

// sortItems sorts items by the value path finds in each, as kubectl's
// --sort-by does: numbers numerically and exactly, strings in byte order,
// false before true; items without a value first. The sort is stable.
func sortItems(items []item, path string) error {
	jp, err := parsePath("--sort-by", path)
	if err != nil {
		return err
	}
	keys := make([]any, len(items))
	for i, it := range items {
		obj, err := plainObject(it.r)
		if err != nil {
			return err
		}
		vals, err := values(jp, obj)
		if err != nil {
			return fmt.Errorf("--sort-by %s: %w", path, err)
		}
		if len(vals) > 0 {
			keys[i] = vals[0]
			if n, ok := keys[i].(json.Number); ok {
				r, ok := new(big.Rat).SetString(n.String())
				if !ok {
					return fmt.Errorf("--sort-by %s: %s is not a number", path, n)
				}
				keys[i] = r
			}
		}
	}
	idx := make([]int, len(items))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return compareKeys(keys[idx[a]], keys[idx[b]]) < 0 })
	sorted := make([]item, len(items))
	for i, j := range idx {
		sorted[i] = items[j]
	}
	copy(items, sorted)
	return nil
}

// compareKeys orders sort keys: missing, then booleans, numbers, strings,
// and anything else by its JSON form.
func compareKeys(a, b any) int {
	rank := func(v any) int {
		switch v.(type) {
		case nil:
			return 0
		case bool:
			return 1
		case *big.Rat:
			return 2
		case string:
			return 3
		}
		return 4
	}
	if ra, rb := rank(a), rank(b); ra != rb {
		return ra - rb
	}
	switch a := a.(type) {
	case nil:
		return 0
	case bool:
		switch {
		case a == b.(bool):
			return 0
		case !a:
			return -1
		}
		return 1
	case *big.Rat:
		return a.Cmp(b.(*big.Rat))
	case string:
		return strings.Compare(a, b.(string))
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Compare(ja, jb)
}

// jsonpathTemplate is the template of -o jsonpath=... or
// jsonpath-file=..., or "" for another output.
func jsonpathTemplate(output string) (string, bool, error) {
	if t, ok := strings.CutPrefix(output, "jsonpath="); ok {
		return t, true, nil
	}
	if f, ok := strings.CutPrefix(output, "jsonpath-file="); ok {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", true, fmt.Errorf("-o jsonpath-file: %w", err)
		}
		return string(b), true, nil
	}
	return "", false, nil
}

// printJSONPath prints v through the template, as kubectl's -o jsonpath.
func (c *cli) printJSONPath(tmpl string, v any) error {
	jp := jsonpath.New("-o jsonpath").AllowMissingKeys(true)
	if err := jp.Parse(tmpl); err != nil {
		return fmt.Errorf("-o jsonpath: %q does not parse: %w", tmpl, err)
	}
	obj, err := plain(v)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := jp.Execute(&b, obj); err != nil {
		return fmt.Errorf("-o jsonpath: %w", err)
	}
	_, err = c.stdout.Write(b.Bytes())
	return err
}

// ageWorkers bounds the History calls that find the ages of a table's
// resources.
const ageWorkers = 8

// maxAgeRows is the most rows whose AGE cup get finds with a History
// call each, for rows a list did not answer the last change of (a type
// whose controller maps resources to no files, resources read by name).
// Each costs a walk of the branch's history back to the resource's last
// change: a new cupd took 27–32 s to answer 1,000 of them over 100
// commits (server.BenchmarkAges1000, list+ages), where a list with
// with_changes took 0.31 s (list+changes). Past it AGE is <unknown>, as
// kubectl shows a missing timestamp, and a warning says so.
const maxAgeRows = 100

// ages are the AGE cells of items: how long ago the commit that last
// changed each was made (at revision), kubectl's short form, from what the
// list answered (item.changed), or else from a History call per
// resource, ageWorkers at a time; <unknown> when the server cannot tell.
func (c *cli) ages(ctx context.Context, items []item, revision string) ([]string, error) {
	conn, err := c.connect()
	if err != nil {
		return nil, err
	}
	now := c.now()
	out := make([]string, len(items))
	var ask []int // the rows the list did not answer
	for i, it := range items {
		out[i] = "<unknown>"
		if it.changed == "" {
			ask = append(ask, i)
		} else if t, err := time.Parse(time.RFC3339, it.changed); err == nil {
			out[i] = duration.HumanDuration(now.Sub(t))
		}
	}
	if len(ask) > maxAgeRows {
		fmt.Fprintf(c.stderr, "Warning: AGE is <unknown> for %d rows: the server's list cannot tell their last changes, and cup asks their history for at most %d rows (each costs a walk of the history); narrow the list with -l or --field-selector, or see one resource's with cup history\n", len(ask), maxAgeRows)
		return out, nil
	}
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(ageWorkers)
	for _, i := range ask {
		it := items[i]
		g.Go(func() error {
			md := it.r.GetMetadata()
			res, err := conn.resources.History(ctx, connect.NewRequest(&cupv1alpha1.HistoryRequest{
				Group: it.t.group(), Version: it.t.version, Plural: it.t.plural(),
				Namespace: md.GetNamespace(), Name: md.GetName(), Until: revision, PageSize: 1,
			}))
			out[i] = "<unknown>"
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err != nil {
				return nil // a type whose history cannot be read still prints
			}
			if es := res.Msg.GetEntries(); len(es) > 0 {
				if t, err := time.Parse(time.RFC3339, es[0].GetTime()); err == nil {
					out[i] = duration.HumanDuration(now.Sub(t))
				}
			}
			return nil
		})
	}
	return out, g.Wait()
}
