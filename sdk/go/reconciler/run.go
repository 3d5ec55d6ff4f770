package reconciler

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// The protocol's exit codes.
const (
	exitOK      = 0
	exitFailed  = 1
	exitInvalid = 3
)

const usage = "usage: reconcile <reconciler>, with the request as JSON on stdin"

// Invocation is one run of a module: what cupd gives it.
type Invocation struct {
	// Args are the command-line arguments without the program name:
	// {"reconcile", "<reconciler>"}.
	Args []string
	// Stdin holds the request as JSON. Nil reads as empty.
	Stdin io.Reader
	// Stdout receives the response, Stderr messages. Nil discards.
	Stdout, Stderr io.Writer
}

// Run serves the request of inv with h and returns the module's exit
// code: what [Main] does, but for the process.
//
// It reads the request from inv.Stdin (fields it does not know are
// ignored, so that cupd may send more than this SDK knows), calls h, and
// writes the response to inv.Stdout as one line of JSON. The exit code
// is 0 on success; 3 when h returns an error wrapping [ErrInvalidInput],
// with {"code":"invalid_input","message":"..."} on inv.Stderr; and 1, with
// the message as text on inv.Stderr, for anything else: arguments other
// than `reconcile <reconciler>`, a request that is not valid JSON, names
// another reconciler than the arguments or has no primary, another error
// of h, a panic in h (recovered), or a response that cannot be written
// (a nil output, a spec that is not a JSON object, a negative
// RequeueAfter).
func Run(ctx context.Context, h Handler, inv *Invocation) (code int) {
	stdout, stderr := inv.Stdout, inv.Stderr
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(stderr, "panic: %v\n", p)
			code = exitFailed
		}
	}()
	out, err := serve(ctx, h, inv)
	switch {
	case err == nil:
		if _, err := stdout.Write(out); err != nil {
			fmt.Fprintf(stderr, "writing the response: %v\n", err)
			return exitFailed
		}
		return exitOK
	case errors.Is(err, ErrInvalidInput):
		msg, _ := encode(struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		}{"invalid_input", err.Error()})
		stderr.Write(msg)
		return exitInvalid
	default:
		fmt.Fprintln(stderr, err)
		return exitFailed
	}
}

// serve parses the invocation, calls h and encodes its response. Errors
// of the invocation itself do not wrap ErrInvalidInput: they are cupd's,
// not the inputs'.
func serve(ctx context.Context, h Handler, inv *Invocation) ([]byte, error) {
	if h == nil {
		return nil, errors.New("no handler")
	}
	switch {
	case len(inv.Args) == 0:
		return nil, errors.New("missing verb; " + usage)
	case inv.Args[0] != "reconcile":
		return nil, fmt.Errorf("unknown verb %q: this module is a cup reconciler, not a controller; %s", inv.Args[0], usage)
	case len(inv.Args) != 2 || inv.Args[1] == "":
		return nil, fmt.Errorf("reconcile takes 1 argument, the reconciler's name, not %d; %s", len(inv.Args)-1, usage)
	}
	name := inv.Args[1]
	req, err := readRequest(inv.Stdin)
	if err != nil {
		return nil, err
	}
	if req.Reconciler == "" {
		req.Reconciler = name
	} else if req.Reconciler != name {
		return nil, fmt.Errorf("the request on stdin is for reconciler %q, the arguments name %q", req.Reconciler, name)
	}
	resp, err := h.Reconcile(ctx, req)
	if err != nil {
		return nil, err
	}
	if resp == nil {
		resp = &Response{}
	}
	if resp.RequeueAfter < 0 {
		return nil, fmt.Errorf("the handler returned a negative requeueAfter, %s", resp.RequeueAfter)
	}
	for i, r := range resp.Outputs {
		if r == nil {
			return nil, fmt.Errorf("the handler returned a nil output (outputs[%d])", i)
		}
		if s := bytes.TrimSpace(r.Spec); len(s) > 0 && s[0] != '{' {
			return nil, fmt.Errorf("the handler returned %s %s %q whose spec is not a JSON object", r.APIVersion, r.Kind, r.Metadata.Name)
		}
	}
	out, err := encode(resp)
	if err != nil {
		return nil, fmt.Errorf("encoding the response: %w", err)
	}
	return out, nil
}

// readRequest decodes the request on stdin.
func readRequest(stdin io.Reader) (*Request, error) {
	var data []byte
	if stdin != nil {
		var err error
		if data, err = io.ReadAll(stdin); err != nil {
			return nil, fmt.Errorf("reading stdin: %w", err)
		}
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("reconcile needs the request as JSON on stdin")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var req Request
	if err := dec.Decode(&req); err != nil {
		return nil, fmt.Errorf("decoding the request on stdin: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("decoding the request on stdin: unexpected data after the request")
	}
	if req.Primary == nil {
		return nil, errors.New("the request on stdin has no primary")
	}
	return &req, nil
}

// encode writes v as one line of JSON, leaving <, > and & as they are.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Main serves the reconcile of the module's command line and stdin with
// h, writes the response to stdout and exits with the protocol's exit
// code; see [Run]. Call it last in main.
func Main(h Handler) {
	inv := &Invocation{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
	if len(os.Args) > 1 {
		inv.Args = os.Args[1:]
	}
	os.Exit(Run(context.Background(), h, inv))
}
