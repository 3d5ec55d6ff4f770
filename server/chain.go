package server

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"connectrpc.com/connect"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// The chain every call of the API goes through, whatever its form, in
// order:
//
//  1. request id: withRequestID takes the caller's X-Request-Id or makes
//     one, answers it in the X-Request-Id header, and puts it in the
//     context, where every log line of the call finds it (logHandler);
//  2. timeout: withTimeout bounds the call, its body and its answer;
//  3. authentication: authenticate (auth.go) establishes the caller;
//  4. the call: a Connect interceptor (interceptor) or a REST route (rest)
//     starts a call with its procedure and form, and from there on both
//     share startCall and finish:
//  5. validation: the request against the proto's rules (validate.go);
//  6. authorization: the core asks the policy (auth.go) before it looks
//     anything up;
//  7. the core and the adapters (core.go, connect.go, rest.go);
//  8. error mapping: toConnect (errors.go), once, in finish;
//  9. logging: finish logs the call once: each write at info (at error
//     when cupd failed), other failures by whose fault they are.
//
// REST and Connect differ only in how they decode a request and encode its
// answer.

// headerRequestID carries a request's id, both ways.
const headerRequestID = "X-Request-Id"

// maxRequestIDLen bounds a request id taken from the caller.
const maxRequestIDLen = 128

// requestID is the id of the request ctx serves; empty outside a request.
func requestID(ctx context.Context) string {
	if c, _ := ctx.Value(callKey{}).(*call); c != nil {
		return c.id
	}
	return ""
}

// saneRequestID reports whether a caller's request id is fit to log and
// repeat: 1 to 128 printable ASCII characters, without spaces.
func saneRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= ' ' || c > '~' {
			return false
		}
	}
	return true
}

// newRequestID is 128 random bits in hex.
func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails
	return hex.EncodeToString(b[:])
}

// withRequestID gives every request an id: the caller's X-Request-Id when
// it is sane, else a new one. The answer carries it in X-Request-Id, and
// the request's context holds it for the log, in the call the request
// may become (startCall), so that a call costs one context value.
func withRequestID(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(headerRequestID)
		if !saneRequestID(id) {
			id = newRequestID()
		}
		w.Header()[headerRequestID] = []string{id}
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callKey{}, &call{id: id})))
	})
}

// logHandler adds the request id of the context to every record logged
// with one.
type logHandler struct{ slog.Handler }

func (h logHandler) Handle(ctx context.Context, r slog.Record) error {
	if id := requestID(ctx); id != "" {
		r.AddAttrs(slog.String("request_id", id))
	}
	return h.Handler.Handle(ctx, r)
}

func (h logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return logHandler{h.Handler.WithAttrs(as)}
}

func (h logHandler) WithGroup(name string) slog.Handler {
	return logHandler{h.Handler.WithGroup(name)}
}

// Forms of a call, as metrics and logs name them.
const (
	formREST    = "rest"
	formConnect = "connect"
	formGRPC    = "grpc"
	formGRPCWeb = "grpc-web"
)

// connectForm names the form of a call Connect's handlers serve.
func connectForm(protocol string) string {
	switch protocol {
	case connect.ProtocolGRPC:
		return formGRPC
	case connect.ProtocolGRPCWeb:
		return formGRPCWeb
	}
	return formConnect
}

// call is one call going through the chain.
type call struct {
	id        string // the request id
	procedure string // the Connect procedure, or the REST route's pattern
	form      string // formREST, formConnect, formGRPC or formGRPCWeb
	start     time.Time
	// err is the call's failure, as the adapter answers it.
	err error
	// write is set by the core for a put or delete.
	write *writeRecord
	// obs is the call's metrics and span (observe.go).
	obs *observed
}

// writeRecord is what the log tells of a write.
type writeRecord struct {
	verb                   string // "put", "delete" or "apply"
	items                  int    // for an apply, how many items it has
	group, version, plural string
	namespace, name        string
	who, commit, outcome   string
	replayed               bool
}

type callKey struct{}

// callFrom is the call ctx serves, or nil.
func callFrom(ctx context.Context) *call {
	if c, _ := ctx.Value(callKey{}).(*call); c != nil && c.procedure != "" {
		return c
	}
	return nil
}

// startCall is where a call starts: its procedure and form are known.
// Per-call metrics and tracing hook in here, and in finish, where the
// call's final code is known.
//
// The call is the one withRequestID put in ctx, when it did (it always
// does in Handler); ctx is returned as it is then.
func (s *Server) startCall(ctx context.Context, procedure, form string, h http.Header) (context.Context, *call) {
	c, _ := ctx.Value(callKey{}).(*call)
	if c == nil || c.procedure != "" {
		c = &call{id: requestID(ctx)}
		ctx = context.WithValue(ctx, callKey{}, c)
	}
	c.procedure, c.form, c.start = procedure, form, time.Now()
	ctx, c.obs = s.observeCall(ctx, procedure, form, h)
	return ctx, c
}

// finish ends a call that failed with err, or succeeded with nil: it maps
// err to the code the caller gets, once, logs the call, and returns the
// error to answer.
func (s *Server) finish(ctx context.Context, c *call, err error) *connect.Error {
	if err != nil {
		err = explainTimeout(ctx, err)
	}
	ce := toConnect(err)
	code := connect.Code(0) // OK
	if ce != nil {
		code = ce.Code()
	}
	s.logCall(ctx, c, err, code)
	if c.obs != nil {
		c.obs.end(code)
		c.obs = nil
	}
	return ce
}

// logCall logs a finished call: a write in one line at info, with who
// wrote what, the commit, the outcome and how long it took (at error when
// cupd failed); any other call only when it failed, by whose fault it was
// (logFailure).
func (s *Server) logCall(ctx context.Context, c *call, err error, code connect.Code) {
	if w := c.write; w != nil {
		level := slog.LevelInfo
		if fault(code) {
			level = slog.LevelError
		}
		outcome := w.outcome
		if err != nil {
			outcome = "failed"
		}
		what := slog.String("resource", fmt.Sprintf("%s/%s/%s %s/%s", w.group, w.version, w.plural, w.namespace, w.name))
		if w.verb == "apply" {
			what = slog.Int("items", w.items)
		}
		attrs := []slog.Attr{
			slog.String("procedure", c.procedure), slog.String("form", c.form),
			slog.String("verb", w.verb), slog.String("who", w.who), what,
			slog.String("commit", w.commit), slog.String("outcome", outcome), slog.Bool("replayed", w.replayed),
			slog.String("code", codeName(code)), slog.Duration("duration", time.Since(c.start)),
		}
		if err != nil {
			attrs = append(attrs, slog.Any("error", errorText(err, code)))
		}
		s.cfg.logger.LogAttrs(ctx, level, "write", attrs...)
		return
	}
	if err != nil {
		logFailure(ctx, s.cfg.logger, c.procedure, err)
	}
}

// codeName is code as Connect names it, "ok" for success.
func codeName(code connect.Code) string {
	if code == 0 {
		return "ok"
	}
	return code.String()
}

// errorText is what the log tells of err: all of it for cupd's own
// faults, the caller's message otherwise.
func errorText(err error, code connect.Code) string {
	if fault(code) {
		return err.Error()
	}
	return toConnect(err).Message()
}

// fault reports whether code says cupd failed, not the caller: only these
// are logged at error level.
func fault(code connect.Code) bool {
	switch code {
	case connect.CodeInternal, connect.CodeUnknown, connect.CodeDataLoss:
		return true
	}
	return false
}

// recordWrite tells the call in ctx, if any, about the write w.
func recordWrite(ctx context.Context, w *writeTarget) *writeRecord {
	c := callFrom(ctx)
	if c == nil {
		return nil
	}
	verb := "put"
	switch {
	case w.patch != nil:
		verb = "patch"
	case w.resourceForWrite == nil:
		verb = "delete"
	}
	c.write = &writeRecord{
		verb: verb, group: w.t.Group, version: w.t.Version, plural: w.t.Plural,
		namespace: w.namespace, name: w.name, who: w.requester,
	}
	if c.write.who == "" {
		c.write.who = "anonymous"
	}
	return c.write
}

// recordApply tells the call in ctx, if any, about a batch of n items
// with the options opts.
func recordApply(ctx context.Context, opts *writeTarget, n int) *writeRecord {
	c := callFrom(ctx)
	if c == nil {
		return nil
	}
	c.write = &writeRecord{verb: "apply", items: n, who: cmp.Or(opts.requester, "anonymous")}
	return c.write
}

// interceptor is the chain's call layer for Connect's handlers: it starts
// the call, refuses requests holding fields the proto does not have,
// validates them against the proto's rules before any handler runs, and
// finishes the call. Streaming calls (Watch) go through the same steps:
// their request is checked as the handler receives it.
func (s *Server) interceptor() connect.Interceptor { return chainInterceptor{s} }

type chainInterceptor struct{ s *Server }

func (i chainInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	s := i.s
	return func(ctx context.Context, req connect.AnyRequest) (res connect.AnyResponse, err error) {
		ctx, c := s.startCall(ctx, req.Spec().Procedure, connectForm(req.Peer().Protocol), req.Header())
		defer func() {
			if p := recover(); p != nil {
				// Connect's recovery answers; the chain logs it.
				s.finish(ctx, c, fmt.Errorf("panic: %v\n%s", p, debug.Stack()))
				panic(p)
			}
		}()
		err = refuseUnknown(req.Any())
		if err == nil {
			err = s.validate(req.Any())
		}
		if err == nil {
			res, err = next(ctx, req)
		}
		if ce := s.finish(ctx, c, err); ce != nil {
			return nil, ce
		}
		return res, nil
	}
}

func (i chainInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (i chainInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	s := i.s
	return func(ctx context.Context, conn connect.StreamingHandlerConn) (err error) {
		ctx, c := s.startCall(ctx, conn.Spec().Procedure, connectForm(conn.Peer().Protocol), conn.RequestHeader())
		defer func() {
			if p := recover(); p != nil {
				s.finish(ctx, c, fmt.Errorf("panic: %v\n%s", p, debug.Stack()))
				panic(p)
			}
		}()
		err = next(ctx, checkedConn{conn, s})
		ce := s.finish(ctx, c, err)
		if ce == nil {
			return nil
		}
		resumeTrailer(err, ce)
		return ce
	}
}

// checkedConn refuses and validates the messages a streaming handler
// receives, as the unary chain does its request.
type checkedConn struct {
	connect.StreamingHandlerConn
	s *Server
}

func (c checkedConn) Receive(msg any) error {
	if err := c.StreamingHandlerConn.Receive(msg); err != nil {
		return err
	}
	if err := refuseUnknown(msg); err != nil {
		return err
	}
	return c.s.validate(msg)
}

// restCall is the chain's call layer for a route of the REST form: it
// starts the call, serves h, and finishes the call with the error h
// answered (writeError), or a panic of h.
func (s *Server) restCall(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, c := s.startCall(r.Context(), restProcedure(r.Pattern), formREST, r.Header)
		if span := trace.SpanFromContext(ctx); span.IsRecording() {
			span.SetAttributes(attribute.String("http.request.method", r.Method), attribute.String("http.route", r.Pattern))
		}
		if ctx != r.Context() {
			r = r.WithContext(ctx)
		}
		defer func() {
			p := recover()
			if p == http.ErrAbortHandler {
				panic(p)
			}
			if p != nil {
				s.writeError(w, r, fmt.Errorf("panic: %v\n%s", p, debug.Stack()))
			}
			s.finish(ctx, c, c.err)
		}()
		h(w, r)
	})
}

// rest is restCall for a route taking the query parameters allowed, each
// given once: any other query is refused with InvalidArgument naming the
// parameter, before anything else is done. A parameter a caller misspells
// would otherwise be ignored, and the request would do something other
// than what they asked. The route it returns tells its parameters, which
// the OpenAPI documents list (openapi.go).
func (s *Server) rest(h http.HandlerFunc, allowed ...string) restRoute {
	return restRoute{s.restCall(func(w http.ResponseWriter, r *http.Request) {
		if err := queryAllowed(r, allowed); err != nil {
			s.writeError(w, r, err)
			return
		}
		h(w, r)
	}), allowed}
}

// restRoute is a route of the REST form and the query parameters it
// takes.
type restRoute struct {
	http.Handler
	params []string
}

// errMethodNotAllowed is the failure logged for a REST call with a
// method its path does not serve.
var errMethodNotAllowed = errors.New("method not allowed")
