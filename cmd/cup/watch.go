package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"connectrpc.com/connect"
	"github.com/spf13/pflag"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
)

// Watching: cup get -w prints what cup get prints, then a row (or an
// object) per change as the server streams it, kubectl's way. A watch the
// server closes for falling behind (RESOURCE_EXHAUSTED with the revision to
// resume from) is opened again from that revision, so that the output has
// neither gaps nor repeats.

// headerResumeRevision is the trailer in which the server names the
// revision to resume a watch it closed from.
const headerResumeRevision = "Cup-Resume-Revision"

// maxIdleResumes is how many times in a row a watch is resumed without
// receiving an event before cup gives up.
const maxIdleResumes = 10

// resumeRevision is the form of a revision a watch resumes from: a commit
// id, optionally followed by how many of its events were had.
var resumeRevision = regexp.MustCompile(`^[0-9a-f]{4,40}([.][1-9][0-9]{0,8})?$`)

// watchFlags are get's flags for watching.
type watchFlags struct {
	watch, watchOnly, events bool
}

func (w *watchFlags) add(f *pflag.FlagSet) {
	f.BoolVarP(&w.watch, "watch", "w", false, "after printing the resources, print each change as it happens, until interrupted")
	f.BoolVar(&w.watchOnly, "watch-only", false, "print only the changes, not the resources as they are first")
	f.BoolVar(&w.events, "output-watch-events", false, `with --watch: print the type of each change (ADDED, MODIFIED, DELETED): an EVENT column, or {"type": ..., "object": ...} with -o json or yaml`)
}

// requested reports whether any watch flag is set.
func (w *watchFlags) requested() bool { return w.watch || w.watchOnly || w.events }

// watchQuery is what cup get -w was asked.
type watchQuery struct {
	args                                      []string
	selector, fieldSelector, revision, output string
	problems, allNamespaces                   bool
	table                                     tableFlags
}

// watch runs cup get -w: it prints the resources of q (unless
// --watch-only), then each change, until ctx ends or the server ends the
// stream.
func (c *cli) watch(ctx context.Context, wf *watchFlags, q watchQuery) error {
	switch {
	case !wf.watch && !wf.watchOnly:
		return errors.New("--output-watch-events needs --watch or --watch-only")
	case q.problems:
		return errors.New("--problems cannot be used with --watch")
	case wf.events && q.output == "name":
		return errors.New("--output-watch-events works with -o table, wide, json or yaml")
	}
	typ, name := q.args[0], ""
	switch {
	case len(q.args) == 2 && !strings.Contains(typ, "/"):
		name = q.args[1]
	case len(q.args) == 1 && strings.Contains(typ, "/"):
		typ, name, _ = strings.Cut(typ, "/")
		if name == "" {
			return fmt.Errorf("%q: write TYPE/NAME", q.args[0])
		}
	case len(q.args) > 1:
		return errors.New("--watch watches one TYPE, or one resource: TYPE NAME or TYPE/NAME")
	}
	if name != "" && (q.selector != "" || q.fieldSelector != "") {
		return errors.New("-l and --field-selector cannot be used with named resources")
	}
	conn, err := c.connect()
	if err != nil {
		return err
	}
	t, err := c.resolveType(ctx, typ)
	if err != nil {
		return err
	}
	namespace := conn.namespace // "" watches every namespace
	if q.allNamespaces {
		namespace = ""
	}
	rev, err := c.watchRevision(ctx, t, namespace, q.revision)
	if err != nil {
		return err
	}
	initial := !wf.watchOnly
	req := &cupv1alpha1.WatchRequest{
		Group: t.group(), Version: t.version, Plural: t.plural(), Namespace: namespace,
		LabelSelector: q.selector, FieldSelector: q.fieldSelector, Revision: rev, SendInitialEvents: &initial, AllowBookmarks: true,
	}
	spec, err := c.newTableSpec(t, q.output, namespace == "", q.table, false)
	if err != nil {
		return err
	}
	p := &watchPrinter{c: c, t: t, namespace: namespace, name: name, output: q.output, events: wf.events,
		table: &rowPrinter{w: c.stdout}, spec: spec, initialDone: !initial}
	idle := 0
	for {
		got, err := c.watchOnce(ctx, req, p)
		if ctx.Err() != nil {
			return nil // interrupted
		}
		if err == nil {
			return nil // the server ended the watch
		}
		if got {
			idle = 0
		}
		resume := resumeFrom(err, p, got)
		if resume == "" || idle >= maxIdleResumes {
			return err
		}
		idle++
		req.Revision = resume
		// A watch cut before the end of the state it started with starts
		// it again; one cut later sends what follows resume.
		initial := !p.initialDone
		req.SendInitialEvents = &initial
		p.initial = nil
	}
}

// watchOnce streams one watch into p until it ends; got reports whether
// it had any event.
func (c *cli) watchOnce(ctx context.Context, req *cupv1alpha1.WatchRequest, p *watchPrinter) (got bool, err error) {
	conn, err := c.connect()
	if err != nil {
		return false, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := conn.resources.Watch(ctx, connect.NewRequest(req))
	if err != nil {
		return false, err
	}
	defer stream.Close()
	for stream.Receive() {
		got = true
		if err := p.event(ctx, stream.Msg()); err != nil {
			return got, err
		}
	}
	err = stream.Err()
	var ce *connect.Error
	if errors.As(err, &ce) && ce.Meta().Get(headerResumeRevision) == "" {
		if rev := stream.ResponseTrailer().Get(headerResumeRevision); rev != "" {
			ce.Meta().Set(headerResumeRevision, rev)
		}
	}
	return got, err
}

// resumeFrom is the revision to resume a watch that ended with err from,
// or "" when it must not be resumed: only a watch the server closed for
// falling behind is, from the revision the server names, else from the
// last event had, if the watch had any.
func resumeFrom(err error, p *watchPrinter, got bool) string {
	var ce *connect.Error
	if !errors.As(err, &ce) || ce.Code() != connect.CodeResourceExhausted {
		return ""
	}
	if rev := ce.Meta().Get(headerResumeRevision); rev != "" {
		return rev
	}
	if got {
		return p.resume
	}
	return "" // refused at the start, e.g. too many watches: not ours to retry
}

// watchRevision is where a watch from revision starts: "" for the head; a
// commit id or an event's resume revision as it is; and a branch, tag or
// other revision resolved to its commit.
func (c *cli) watchRevision(ctx context.Context, t typeRef, namespace, revision string) (string, error) {
	if revision == "" || resumeRevision.MatchString(revision) {
		return revision, nil
	}
	conn, err := c.connect()
	if err != nil {
		return "", err
	}
	res, err := conn.resources.List(ctx, connect.NewRequest(&cupv1alpha1.ListRequest{
		Group: t.group(), Version: t.version, Plural: t.plural(), Namespace: namespace, Revision: revision, PageSize: 1,
	}))
	if err != nil {
		return "", err
	}
	return res.Msg.GetCommit(), nil
}

// watchPrinter prints a watch's events as cup get -w shows them.
type watchPrinter struct {
	c         *cli
	t         typeRef
	namespace string // "" for every namespace
	name      string // only this resource's events, when set
	output    string
	events    bool

	table       *rowPrinter
	spec        *tableSpec // the table's columns
	header      bool       // the table's header is printed
	docs        int        // YAML documents printed
	initialDone bool
	initial     []*cupv1alpha1.WatchResponse // the state, until its end
	resume      string                       // the last event's resume revision
}

// event prints ev, or keeps it until the initial state is complete.
func (p *watchPrinter) event(ctx context.Context, ev *cupv1alpha1.WatchResponse) error {
	if ev.GetResumeRevision() != "" {
		p.resume = ev.GetResumeRevision()
	}
	if ev.GetType() == cupv1alpha1.WatchEventType_WATCH_EVENT_TYPE_BOOKMARK {
		if !ev.GetInitialEventsEnd() || p.initialDone {
			return nil
		}
		p.initialDone = true
		evs := p.initial
		p.initial = nil
		if p.name != "" && len(evs) == 0 {
			// Not there: the server says so, as cup get does.
			if _, err := p.c.getResource(ctx, p.t, p.namespace, p.name, ev.GetCommit()); err != nil {
				return err
			}
		}
		if len(evs) == 0 && p.name == "" && (p.output == "table" || p.output == "wide") {
			_, err := fmt.Fprintln(p.c.stderr, noResources(p.namespace))
			return err
		}
		return p.print(evs...)
	}
	if p.name != "" && ev.GetResource().GetMetadata().GetName() != p.name {
		return nil
	}
	if !p.initialDone {
		p.initial = append(p.initial, ev)
		return nil
	}
	return p.print(ev)
}

// print prints events: rows of a table (aligned together), or documents.
func (p *watchPrinter) print(evs ...*cupv1alpha1.WatchResponse) error {
	switch p.output {
	case "table", "wide":
		var rows [][]string
		if !p.header {
			header, _ := p.row(nil)
			rows = append(rows, header)
			p.header = true
		}
		for _, ev := range evs {
			row, err := p.row(ev)
			if err != nil {
				return err
			}
			rows = append(rows, row)
		}
		if len(rows) == 0 {
			return nil
		}
		return p.table.print(rows...)
	case "name":
		for _, ev := range evs {
			if _, err := fmt.Fprintf(p.c.stdout, "%s/%s\n", p.t.qualified(), ev.GetResource().GetMetadata().GetName()); err != nil {
				return err
			}
		}
		return nil
	}
	for _, ev := range evs {
		obj, err := resourceObject(ev.GetResource())
		if err != nil {
			return err
		}
		var v any = obj
		if p.events {
			v = watchEvent{Type: eventType(ev.GetType()), Object: obj}
		}
		if p.output == "json" {
			if p.events { // one event per line
				b, err := json.Marshal(v)
				if err != nil {
					return err
				}
				if _, err := p.c.stdout.Write(append(b, '\n')); err != nil {
					return err
				}
				continue
			}
			if err := encode(p.c.stdout, v, "json"); err != nil {
				return err
			}
			continue
		}
		if p.docs > 0 {
			if _, err := fmt.Fprintln(p.c.stdout, "---"); err != nil {
				return err
			}
		}
		p.docs++
		if err := encode(p.c.stdout, v, "yaml"); err != nil {
			return err
		}
	}
	return nil
}

// row is the table row of ev, or the header when ev is nil.
func (p *watchPrinter) row(ev *cupv1alpha1.WatchResponse) ([]string, error) {
	var row []string
	if ev == nil {
		if p.events {
			row = append(row, "EVENT")
		}
		return append(row, p.spec.header()...), nil
	}
	if p.events {
		row = append(row, eventType(ev.GetType()))
	}
	r, err := p.spec.row(ev.GetResource(), ev.GetResource().GetMetadata().GetName(), "")
	return append(row, r...), err
}

// watchEvent is an event as -o json or yaml prints it with
// --output-watch-events, in kubectl's shape.
type watchEvent struct {
	Type   string         `json:"type"`
	Object map[string]any `json:"object"`
}

// eventType is ADDED, MODIFIED or DELETED.
func eventType(t cupv1alpha1.WatchEventType) string {
	return strings.TrimPrefix(t.String(), "WATCH_EVENT_TYPE_")
}
