package controller

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
)

// AnyKind, given to [Mux.Handle], registers a handler for every kind that has
// no handler of its own.
const AnyKind = "*"

// The protocol's exit codes.
const (
	exitOK       = 0
	exitError    = 1
	exitNotFound = 2
)

const usage = "usage: get|put|delete <kind> <namespace> <name>, or list <kind> <namespace> [key=value ...]"

// Mux dispatches the requests of the protocol to the [Handler] registered
// for their kind. The zero value is ready to use. Register every handler
// before the first call of Run; Run may then be called concurrently.
type Mux struct {
	handlers map[string]Handler
}

// Handle registers h for the resources of kind, or for every kind without a
// handler of its own when kind is [AnyKind]. It panics if kind is empty, h is
// nil or kind already has a handler.
func (m *Mux) Handle(kind string, h Handler) {
	switch {
	case kind == "":
		panic("controller: Handle with an empty kind")
	case h == nil:
		panic("controller: Handle with a nil handler for kind " + kind)
	case m.handlers[kind] != nil:
		panic("controller: multiple handlers for kind " + kind)
	}
	if m.handlers == nil {
		m.handlers = make(map[string]Handler)
	}
	m.handlers[kind] = h
}

// Invocation is one run of a module: what cupd gives it.
type Invocation struct {
	// Args are the command-line arguments without the program name, e.g.
	// {"get", "Flag", "default", "dark-mode"}.
	Args []string
	// Env is the environment, where Run finds the request's [Type] beyond
	// its kind. Nil is an empty environment.
	Env map[string]string
	// Stdin holds the resource of a put. Nil reads as empty.
	Stdin io.Reader
	// Stdout receives the result of a get or list, Stderr errors. Nil
	// discards.
	Stdout, Stderr io.Writer
	// FS is the repository tree that get and list read.
	FS fs.FS
	// Dir is the repository tree that put and delete read and write.
	Dir Dir
}

// withDefaults returns inv, or a copy with io.Discard for a nil Stdout or
// Stderr.
func (inv *Invocation) withDefaults() *Invocation {
	if inv.Stdout != nil && inv.Stderr != nil {
		return inv
	}
	c := *inv
	if c.Stdout == nil {
		c.Stdout = io.Discard
	}
	if c.Stderr == nil {
		c.Stderr = io.Discard
	}
	return &c
}

// Run serves the request of inv and returns the module's exit code. Get
// prints the resource, and list a JSON array of the resources sorted by
// name, to inv.Stdout as one line of JSON; the list of an [EachLister] is
// printed as it comes, a resource a line, in the handler's order. Resources a handler returns, and
// the one a put reads, get the request's apiVersion, kind, namespace and
// name where they have none, and must agree with them.
//
// The exit code is 0 on success, 2 when the handler returned an error
// wrapping [ErrNotFound] (except for put, which has no such code) and 1
// otherwise, with the error on inv.Stderr: JSON {"code":"invalid_argument",
// "message":"..."} for a bad request (bad arguments, an unknown kind, a
// resource on stdin that is not valid or does not match the arguments, or an
// error wrapping [ErrInvalid]), the message as plain text for anything else.
// A panic in a handler is recovered and reported as an error.
func (m *Mux) Run(ctx context.Context, inv *Invocation) (code int) {
	inv = inv.withDefaults()
	stderr := inv.Stderr
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(stderr, "panic: %v\n", p)
			code = exitError
		}
	}()
	req, err := parseArgs(inv.Args, inv.Env)
	var out []byte
	if err == nil {
		out, err = m.serve(ctx, req, inv)
	}
	switch {
	case err == nil:
		if _, err := inv.Stdout.Write(out); err != nil {
			fmt.Fprintf(stderr, "writing the result: %v\n", err)
			return exitError
		}
		return exitOK
	case errors.Is(err, ErrInvalid):
		msg, _ := encode(struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		}{"invalid_argument", err.Error()})
		stderr.Write(msg)
		return exitError
	case errors.Is(err, ErrNotFound) && req.verb != "put":
		fmt.Fprintln(stderr, err)
		return exitNotFound
	default:
		fmt.Fprintln(stderr, err)
		return exitError
	}
}

// request is a parsed command line.
type request struct {
	verb            string
	typ             Type
	namespace, name string
	labels          map[string]string // list only
}

func parseArgs(args []string, env map[string]string) (request, error) {
	if len(args) == 0 {
		return request{}, Invalid("missing verb; %s", usage)
	}
	req := request{verb: args[0]}
	switch req.verb {
	case "get", "put", "delete":
		if len(args) != 4 {
			return req, Invalid("%s takes 3 arguments, not %d; %s", req.verb, len(args)-1, usage)
		}
		req.name = args[3]
		if req.name == "" {
			return req, Invalid("empty name")
		}
	case "list":
		if len(args) < 3 {
			return req, Invalid("list takes at least 2 arguments, not %d; %s", len(args)-1, usage)
		}
		for _, arg := range args[3:] {
			k, v, ok := strings.Cut(arg, "=")
			if !ok || k == "" {
				return req, Invalid("label selector %q is not key=value", arg)
			}
			if old, dup := req.labels[k]; dup && old != v {
				return req, Invalid("label selector asks for %s=%s and %s=%s", k, old, k, v)
			}
			if req.labels == nil {
				req.labels = make(map[string]string)
			}
			req.labels[k] = v
		}
	default:
		return req, Invalid("unknown verb %q; %s", req.verb, usage)
	}
	req.typ = Type{
		APIVersion: env["CUP_API_VERSION"],
		Group:      env["CUP_GROUP"],
		Version:    env["CUP_VERSION"],
		Kind:       args[1],
		Plural:     env["CUP_PLURAL"],
	}
	if req.typ.APIVersion == "" && req.typ.Version != "" {
		req.typ.APIVersion = strings.TrimPrefix(req.typ.Group+"/"+req.typ.Version, "/")
	}
	req.namespace = args[2]
	if req.typ.Kind == "" {
		return req, Invalid("empty kind")
	}
	return req, nil
}

func (m *Mux) serve(ctx context.Context, req request, inv *Invocation) ([]byte, error) {
	h := m.handlers[req.typ.Kind]
	if h == nil {
		h = m.handlers[AnyKind]
	}
	if h == nil {
		return nil, Invalid("kind %q is not served by this module", req.typ.Kind)
	}
	switch req.verb {
	case "get":
		r, err := h.Get(ctx, &GetRequest{FS: inv.FS, Type: req.typ, Namespace: req.namespace, Name: req.name})
		if err != nil {
			return nil, err
		}
		if err := req.check(r); err != nil {
			return nil, err
		}
		return encode(r)
	case "list":
		if each, ok := h.(EachLister); ok {
			return nil, req.listEach(ctx, each, inv)
		}
		rs, err := h.List(ctx, &ListRequest{FS: inv.FS, Type: req.typ, Namespace: req.namespace, Labels: req.labels})
		if err != nil {
			return nil, err
		}
		return req.listed(rs)
	case "put":
		r, err := req.readResource(inv.Stdin)
		if err != nil {
			return nil, err
		}
		return nil, h.Put(ctx, &PutRequest{Dir: inv.Dir, Type: req.typ, Resource: r})
	default: // delete, as parseArgs allows no other verb
		return nil, h.Delete(ctx, &DeleteRequest{Dir: inv.Dir, Type: req.typ, Namespace: req.namespace, Name: req.name})
	}
}

// listed checks, filters and sorts what a handler listed and encodes it.
func (req request) listed(rs []*Resource) ([]byte, error) {
	kept := make([]*Resource, 0, len(rs))
	seen := make(map[string]bool, len(rs))
	for _, r := range rs {
		keep, err := req.admit(r, seen)
		if err != nil {
			return nil, err
		}
		if keep {
			kept = append(kept, r)
		}
	}
	slices.SortFunc(kept, func(a, b *Resource) int { return cmp.Compare(a.Metadata.Name, b.Metadata.Name) })
	return encode(kept)
}

// admit checks a resource a handler listed, refusing a name listed before
// (in seen, to which it adds the name) whether or not the labels select
// either, and reports whether the labels select it.
func (req request) admit(r *Resource, seen map[string]bool) (keep bool, err error) {
	if err := req.check(r); err != nil {
		return false, err
	}
	if seen[r.Metadata.Name] {
		return false, fmt.Errorf("list %s: two resources named %q", req, r.Metadata.Name)
	}
	seen[r.Metadata.Name] = true
	return r.MatchLabels(req.labels), nil
}

// listEach prints what an EachLister lists, as it lists it: a JSON array
// with a resource a line, each admitted as listed admits them. Only the
// names are kept, to refuse a name listed twice.
func (req request) listEach(ctx context.Context, h EachLister, inv *Invocation) error {
	w := bufio.NewWriterSize(inv.Stdout, 64<<10)
	seen := make(map[string]bool)
	sep := "["
	var buf []byte
	err := h.ListEach(ctx, &ListRequest{FS: inv.FS, Type: req.typ, Namespace: req.namespace, Labels: req.labels}, func(r *Resource) error {
		if keep, err := req.admit(r, seen); err != nil || !keep {
			return err
		}
		data, ok := r.appendJSON(buf[:0])
		if !ok {
			var err error
			if data, err = encode(r); err != nil {
				return err
			}
		}
		buf = data[:0]
		w.WriteString(sep)
		sep = ",\n"
		_, err := w.Write(bytes.TrimSuffix(data, []byte("\n")))
		return err
	})
	if err != nil {
		return err
	}
	if sep == "[" {
		w.WriteString("[")
	}
	w.WriteString("]\n")
	if err := w.Flush(); err != nil {
		return fmt.Errorf("writing the result: %w", err)
	}
	return nil
}

// check completes a resource a handler returned from the request and
// reports an error unless the resource then belongs to it.
func (req request) check(r *Resource) error {
	if r == nil {
		return fmt.Errorf("%s %s: the handler returned a nil resource", req.verb, req)
	}
	req.fill(r)
	if r.Metadata.Name == "" {
		return fmt.Errorf("%s %s: the handler returned a resource without a name", req.verb, req)
	}
	if !req.matches(r) {
		return fmt.Errorf("%s %s: the handler returned %s", req.verb, req, describe(r))
	}
	if err := checkSpec(r.Spec); err != nil {
		return fmt.Errorf("%s %s: the handler returned %s: %w", req.verb, req, r.Metadata.Name, err)
	}
	return nil
}

// readResource reads the resource of a put from stdin, completes it from the
// request and checks that they agree.
func (req request) readResource(stdin io.Reader) (*Resource, error) {
	var data []byte
	if stdin != nil {
		var err error
		if data, err = io.ReadAll(stdin); err != nil {
			return nil, fmt.Errorf("reading stdin: %w", err)
		}
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, Invalid("put needs the resource as JSON on stdin")
	}
	r, err := parseResource(data)
	if err != nil {
		return nil, Invalid("%w", err)
	}
	req.fill(r)
	if !req.matches(r) {
		return nil, Invalid("the resource on stdin is %s, the arguments name %s", describe(r), req)
	}
	return r, nil
}

// fill sets the empty apiVersion, kind, namespace and name of r from the
// request.
func (req request) fill(r *Resource) {
	for field, value := range map[*string]string{
		&r.APIVersion:         req.typ.APIVersion,
		&r.Kind:               req.typ.Kind,
		&r.Metadata.Namespace: req.namespace,
		&r.Metadata.Name:      req.name,
	} {
		if *field == "" {
			*field = value
		}
	}
}

func (req request) matches(r *Resource) bool {
	return (req.typ.APIVersion == "" || r.APIVersion == req.typ.APIVersion) && r.Kind == req.typ.Kind &&
		r.Metadata.Namespace == req.namespace && (req.name == "" || r.Metadata.Name == req.name)
}

// String describes the resource or resources the request is about, for
// messages.
func (req request) String() string {
	return describe(&Resource{APIVersion: req.typ.APIVersion, Kind: req.typ.Kind,
		Metadata: Metadata{Namespace: req.namespace, Name: req.name}})
}

// describe names r in messages, e.g. `flags.cup.dev/v1 Flag "x" in
// namespace "default"`.
func describe(r *Resource) string {
	s := r.Kind
	if r.APIVersion != "" {
		s = r.APIVersion + " " + s
	}
	if r.Metadata.Name != "" {
		s += fmt.Sprintf(" %q", r.Metadata.Name)
	}
	return s + fmt.Sprintf(" in namespace %q", r.Metadata.Namespace)
}

// encode prints v as one line of JSON.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encoding the result: %w", err)
	}
	return buf.Bytes(), nil
}

var defaultMux Mux

// Handle registers h for kind with the Mux that [Run] and [Main] use;
// see [Mux.Handle].
func Handle(kind string, h Handler) { defaultMux.Handle(kind, h) }

// Run serves one request with the handlers registered by [Handle];
// see [Mux.Run].
func Run(ctx context.Context, inv *Invocation) int { return defaultMux.Run(ctx, inv) }

// Main serves the request of the module's command line and environment with
// the handlers registered by [Handle], on the tree cupd mounts at "/", and
// exits with the protocol's exit code. Call it last in main.
func Main() {
	inv := &Invocation{
		Env:    make(map[string]string),
		Stdin:  os.Stdin,
		Stdout: os.Stdout,
		Stderr: os.Stderr,
		FS:     os.DirFS("/"),
		Dir:    OSDir("/"),
	}
	if len(os.Args) > 1 {
		inv.Args = os.Args[1:]
	}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			inv.Env[k] = v
		}
	}
	os.Exit(Run(context.Background(), inv))
}
