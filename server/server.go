package server

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"buf.build/go/protovalidate"
	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
	"connectrpc.com/grpcreflect"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/cup-dev/cup/auth"
	"github.com/cup-dev/cup/controller"
	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/gen/cup/v1alpha1/cupv1alpha1connect"
	"github.com/cup-dev/cup/internal/document"
	"github.com/cup-dev/cup/internal/lru"
	"github.com/cup-dev/cup/source"
)

// Type is one served group/version/plural and the controller bound to it.
type Type struct {
	// Type is the group, version, kind and plural, as controllers are
	// given it: all four are required.
	controller.Type
	// Singular is the lowercase singular name, e.g. "flag"; ShortNames are
	// abbreviations for the command line. Discovery shows them, and
	// GetDefinition finds a type by them.
	Singular   string
	ShortNames []string
	// Schema is the version's JSON Schema, shown by discovery.
	Schema json.RawMessage
	// SchemaTarget is "resource" when Schema describes the whole resource and
	// "spec" when it describes the spec only.
	SchemaTarget string
	// PrinterColumns are the version's additionalPrinterColumns, shown by
	// discovery (cup get prints them).
	PrinterColumns []*cupv1alpha1.PrinterColumn
	// Validate checks a resource, decoded from its JSON file form, against the
	// schema. Field paths in the violations are relative to the resource, e.g.
	// "spec.enabled" or "spec.variants[0].key". Nil accepts everything.
	Validate func(doc any) []FieldViolation
	// Controller maps resources of this type onto files.
	Controller controller.Controller
}

// typeKey is what a request names a type by: a controller.Type without
// its Kind, since paths and requests give the plural.
func typeKey(group, version, plural string) controller.Type {
	return controller.Type{Group: group, Version: version, Plural: plural}
}

type config struct {
	logger      *slog.Logger
	maxBody     int64
	cacheBudget int64
	proposals   Proposals
	authn       auth.Authenticator
	authz       auth.Authorizer

	maxListPage    int
	requestTimeout time.Duration
	maxWrites      int
	maxDepth       int
	maxResource    int64
	maxInflight    int64
	maxCalls       int
	maxQueued      int
	metrics        prometheus.Registerer
	tracerProvider trace.TracerProvider
	surface        surfaceConfig

	maxWatches       int
	watchBuffer      int
	bookmarkInterval time.Duration
	watchPoll        time.Duration
	catchUp          func(context.Context) error
}

// Option configures a Server.
type Option func(*config)

// WithLogger sets the logger for failed calls. Default: slog.Default().
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithMaxRequestBytes bounds the size of a request body, on every protocol.
// Larger requests fail with ResourceExhausted. Zero keeps the default,
// [DefaultMaxRequestBytes]; less than zero makes New fail: there is no
// unbounded size.
func WithMaxRequestBytes(n int64) Option {
	return func(c *config) { c.maxBody = orDefault(n, DefaultMaxRequestBytes) }
}

// WithCacheBytes bounds the memory used to memoise reads by commit, roughly,
// in bytes. Zero keeps the default, [DefaultCacheBytes]; less than zero
// makes New fail: memory is always bounded.
func WithCacheBytes(n int64) Option {
	return func(c *config) { c.cacheBudget = orDefault(n, DefaultCacheBytes) }
}

// Server serves the API for one source. It is safe for concurrent use.
type Server struct {
	cfg       config
	src       source.Source
	types     map[controller.Type]*Type
	defs      []*cupv1alpha1.ResourceDefinition
	validator protovalidate.Validator
	memo      *memo
	interner  *interner
	protos    *lru.Cache[*cupv1alpha1.Resource] // Server.proto's
	writes    slots
	bodies    *bodyBudget
	calls     *callSlots
	prefetch  *prefetcher
	obs       *observer
	watchers  slots
	hub       *watchHub
	catchUps  *catchUps // nil without WithCatchUp
	// recs is the reconciler runtime, once SetReconcilers sets it.
	recs atomic.Pointer[reconcilers]
	ui   *uiRoute // nil without WithUI
}

// New returns a Server for src serving types. It fails when two types share a
// group, version and plural, a type lacks names or a controller, or a type is
// in the group cup.dev, which cup's own routes use.
func New(src source.Source, types []*Type, opts ...Option) (*Server, error) {
	cfg := config{
		logger: slog.Default(), maxBody: DefaultMaxRequestBytes, cacheBudget: DefaultCacheBytes,
		maxListPage: DefaultMaxListPage, requestTimeout: DefaultRequestTimeout, maxWrites: DefaultMaxConcurrentWrites,
		maxDepth: DefaultMaxJSONDepth, maxResource: DefaultMaxResourceBytes, maxInflight: DefaultMaxInflightRequestBytes,
		maxCalls: DefaultMaxControllerCalls(), maxQueued: DefaultMaxQueuedControllerCalls,
		maxWatches: DefaultMaxWatches, watchBuffer: DefaultWatchBuffer,
		bookmarkInterval: DefaultWatchBookmarkInterval, watchPoll: DefaultWatchPollInterval,
	}
	for _, o := range opts {
		o(&cfg)
	}
	// Every line logged in a call carries its request id.
	cfg.logger = slog.New(logHandler{cfg.logger.Handler()})
	if cfg.maxDepth < 2 || cfg.maxDepth > document.MaxDepth {
		return nil, fmt.Errorf("server: a JSON depth limit of %d is outside 2 to %d", cfg.maxDepth, document.MaxDepth)
	}
	if cfg.maxResource <= 0 {
		return nil, fmt.Errorf("server: a resource size limit of %d bytes is not positive", cfg.maxResource)
	}
	if cfg.maxBody <= 0 {
		return nil, fmt.Errorf("server: a request size limit of %d bytes is not positive", cfg.maxBody)
	}
	if cfg.cacheBudget <= 0 {
		return nil, fmt.Errorf("server: a cache of %d bytes is not positive", cfg.cacheBudget)
	}
	if src == nil {
		return nil, errors.New("server: nil source")
	}
	if err := checkWatchConfig(&cfg); err != nil {
		return nil, err
	}
	if err := checkOrigins(cfg.surface.corsOrigins); err != nil {
		return nil, err
	}
	if cfg.authz != nil && cfg.authn == nil {
		return nil, errors.New("server: authorization needs an authenticator: without one every call would be refused")
	}
	v, err := protovalidate.New()
	if err != nil {
		return nil, fmt.Errorf("server: protovalidate: %w", err)
	}
	calls, err := newCallSlots(&cfg)
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg: cfg, src: src, types: make(map[controller.Type]*Type), validator: v, memo: newMemo(cfg.cacheBudget),
		interner: newInterner(), protos: lru.New[*cupv1alpha1.Resource](protoCacheBytes), writes: newWriteSlots(cfg.maxWrites), calls: calls,
		bodies:   newBodyBudget(cfg.maxInflight, cfg.maxBody),
		watchers: newWatchSlots(cfg.maxWatches), prefetch: newPrefetcher(),
	}
	s.hub = newWatchHub(s)
	if cfg.catchUp != nil {
		s.catchUps = &catchUps{f: cfg.catchUp}
	}
	for _, t := range types {
		if t.Group == "" || t.Version == "" || t.Plural == "" || t.Kind == "" {
			return nil, fmt.Errorf("server: type %s/%s/%s: group, version, kind and plural are required", t.Group, t.Version, t.Plural)
		}
		if t.Controller == nil {
			return nil, fmt.Errorf("server: type %s/%s/%s has no controller", t.Group, t.Version, t.Plural)
		}
		if err := checkGroup(t); err != nil {
			return nil, err
		}
		k := typeKey(t.Group, t.Version, t.Plural)
		if _, dup := s.types[k]; dup {
			return nil, fmt.Errorf("server: type %s/%s/%s is served twice", t.Group, t.Version, t.Plural)
		}
		s.types[k] = t
	}
	if s.defs, err = definitions(types); err != nil {
		return nil, err
	}
	if s.obs, err = newObserver(&cfg, s.memo); err != nil {
		return nil, err
	}
	if reg := cfg.metrics; reg != nil {
		for _, c := range []prometheus.Collector{s.prefetch.outcomes, s.prefetch.fromListings} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("server: metrics: %w", err)
			}
		}
	}
	if s.ui, err = newUIRoute(&cfg); err != nil {
		return nil, err
	}
	return s, nil
}

// lookup finds the type a request names.
func (s *Server) lookup(group, version, plural string) (*Type, error) {
	if t, ok := s.types[typeKey(group, version, plural)]; ok {
		return t, nil
	}
	return nil, &sentinelError{controller.ErrNotFound,
		fmt.Sprintf("no resource type %q in %s/%s is served: GET /apis lists the served types", plural, group, version)}
}

// compressMinBytes is the smallest answer a Connect handler compresses.
const compressMinBytes = 1 << 10

// Handler returns the HTTP handler serving every protocol on one port:
// Connect, gRPC and gRPC-Web for every service, gRPC reflection, the REST
// form under /apis, gRPC health checking, an index at GET /, the build at
// GET /version, /healthz and /readyz, and with WithUI a web app at /ui/.
// Serve it with HTTP/1.1 and h2c enabled (see NewHTTPServer). With
// WithAuthorization, everything but /healthz, /readyz, /version, health
// checks and the web app needs credentials. With WithCORS, it answers
// browsers on the origins named.
func (s *Server) Handler() http.Handler {
	api := http.NewServeMux()
	opts := []connect.HandlerOption{
		connect.WithInterceptors(s.interceptor()),
		connect.WithReadMaxBytes(int(s.cfg.maxBody)),
		// Answers under 1 KiB go uncompressed even to clients that accept
		// gzip: compressing a watch event of a few hundred bytes for each
		// of a thousand watchers cost more CPU than sending it.
		connect.WithCompressMinBytes(compressMinBytes),
		// The chain (interceptor) logs the panic.
		connect.WithRecover(func(context.Context, connect.Spec, http.Header, any) error {
			return connect.NewError(connect.CodeInternal, errors.New(internalMessage))
		}),
	}
	opts = append(opts, jsonCodecs()...)
	api.Handle(cupv1alpha1connect.NewResourceServiceHandler(&resourceService{s}, opts...))
	api.Handle(cupv1alpha1connect.NewDiscoveryServiceHandler(&discoveryService{s}, opts...))
	api.Handle(cupv1alpha1connect.NewProposalServiceHandler(&proposalService{s}, opts...))
	reflector := grpcreflect.NewStaticReflector(
		cupv1alpha1connect.ResourceServiceName,
		cupv1alpha1connect.DiscoveryServiceName,
		cupv1alpha1connect.ProposalServiceName,
		grpchealth.HealthV1ServiceName,
	)
	api.Handle(grpcreflect.NewHandlerV1(reflector))
	api.Handle(grpcreflect.NewHandlerV1Alpha(reflector))
	s.routeREST(api)
	s.routeOpenAPI(api) // after routeREST: it reads its routes
	s.routeSurface(api)

	mux := http.NewServeMux()
	routePublic(mux, health{s})
	// The chain's first steps (chain.go); the rest run per call, in
	// interceptor and rest.
	authenticated := s.withTimeout(s.authenticate(s.bodies.wrap(s.recoverREST(api))))
	mux.Handle("/", authenticated)
	if s.ui != nil {
		s.ui.route(mux, authenticated)
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if _, err := s.src.View(r.Context(), ""); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = fmt.Fprintf(w, "not ready: %s\n", toConnect(err).Message())
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	return corsHandler(withRequestID(mux), s.cfg.surface.corsOrigins)
}

// recoverREST answers a panic in h (the REST form; Connect's handlers
// recover their own) with an Internal error and logs it, rather than
// letting net/http drop the connection without an answer.
func (s *Server) recoverREST(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			p := recover()
			if p == nil || p == http.ErrAbortHandler {
				if p != nil {
					panic(p)
				}
				return
			}
			s.writeError(w, r, fmt.Errorf("panic: %v\n%s", p, debug.Stack()))
		}()
		h.ServeHTTP(w, r)
	})
}

// HTTPOption configures the http.Server NewHTTPServer returns.
type HTTPOption func(*httpConfig)

type httpConfig struct {
	idleTimeout          time.Duration
	maxHeaderBytes       int
	maxConcurrentStreams int
}

// WithIdleTimeout closes a keep-alive connection (HTTP/1.1 or HTTP/2) that
// carried no request for d. Zero keeps the default, [DefaultIdleTimeout];
// less than zero: never.
func WithIdleTimeout(d time.Duration) HTTPOption {
	return func(c *httpConfig) { c.idleTimeout = orDefault(d, DefaultIdleTimeout) }
}

// WithMaxHeaderBytes bounds the size of a request's line and headers (the
// header list of an HTTP/2 request); larger requests get 431 Request
// Header Fields Too Large. Go's server allows a little slack (4 KiB) over
// n. Zero keeps the default, [DefaultMaxHeaderBytes]; less than zero: Go's
// own bound, 1 MiB (headers are never unbounded).
func WithMaxHeaderBytes(n int) HTTPOption {
	return func(c *httpConfig) { c.maxHeaderBytes = orDefault(n, DefaultMaxHeaderBytes) }
}

// WithMaxConcurrentStreams bounds the requests one HTTP/2 connection may
// have in flight at once; the client waits for a stream to end before it
// opens another. Zero keeps the default, [DefaultMaxConcurrentStreams];
// less than zero: Go's own default (streams are never unbounded).
func WithMaxConcurrentStreams(n int) HTTPOption {
	return func(c *httpConfig) { c.maxConcurrentStreams = orDefault(n, DefaultMaxConcurrentStreams) }
}

// headerTimeout bounds the time a client may take to send a request's line
// and headers (and a TLS handshake).
const headerTimeout = 10 * time.Second

// NewHTTPServer returns an http.Server for h serving HTTP/1.1 and, without
// TLS, HTTP/2 (h2c), as gRPC needs. Headers must arrive within ten
// seconds, and opts bound idle connections, header sizes and HTTP/2
// streams. It sets no ReadTimeout or WriteTimeout, which would cut
// streaming calls: the Server's request timeout bounds each call's body
// and answer instead (WithRequestTimeout).
func NewHTTPServer(addr string, h http.Handler, opts ...HTTPOption) *http.Server {
	cfg := httpConfig{idleTimeout: DefaultIdleTimeout, maxHeaderBytes: DefaultMaxHeaderBytes, maxConcurrentStreams: DefaultMaxConcurrentStreams}
	for _, o := range opts {
		o(&cfg)
	}
	p := new(http.Protocols)
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	p.SetHTTP2(true)
	idle := cfg.idleTimeout
	if idle <= 0 {
		idle = -1 // http.Server: no idle timeout
	}
	// Less than zero: http.Server's and HTTP2Config's own defaults, which
	// they take for zero.
	cfg.maxHeaderBytes = max(cfg.maxHeaderBytes, 0)
	cfg.maxConcurrentStreams = max(cfg.maxConcurrentStreams, 0)
	return &http.Server{
		Addr: addr, Handler: h, Protocols: p,
		ReadHeaderTimeout: headerTimeout,
		IdleTimeout:       idle,
		MaxHeaderBytes:    cfg.maxHeaderBytes,
		HTTP2: &http.HTTP2Config{
			MaxConcurrentStreams: cfg.maxConcurrentStreams,
			// A peer that stops answering pings is gone: its connection
			// is closed rather than kept until the idle timeout.
			SendPingTimeout: time.Minute,
			PingTimeout:     15 * time.Second,
		},
	}
}

// definitions builds discovery's view of types: one definition per group and
// plural, with its versions sorted.
func definitions(types []*Type) ([]*cupv1alpha1.ResourceDefinition, error) {
	byName := map[string]*cupv1alpha1.ResourceDefinition{}
	for _, t := range types {
		name := t.Plural + "." + t.Group
		d, ok := byName[name]
		if !ok {
			d = &cupv1alpha1.ResourceDefinition{
				Name:  name,
				Group: t.Group,
				Names: &cupv1alpha1.Names{
					Kind: t.Kind, Singular: t.Singular, Plural: t.Plural,
					ShortNames: slices.Clone(t.ShortNames),
				},
			}
			byName[name] = d
		}
		v := &cupv1alpha1.DefinitionVersion{Name: t.Version, SchemaTarget: t.SchemaTarget, AdditionalPrinterColumns: t.PrinterColumns}
		if len(t.Schema) > 0 {
			st, err := structFromJSON(t.Schema)
			if err != nil {
				return nil, fmt.Errorf("server: schema of %s/%s: %w", name, t.Version, err)
			}
			v.Schema = st
		}
		d.Versions = append(d.Versions, v)
	}
	defs := make([]*cupv1alpha1.ResourceDefinition, 0, len(byName))
	for _, d := range byName {
		slices.SortFunc(d.Versions, func(a, b *cupv1alpha1.DefinitionVersion) int { return cmp.Compare(a.Name, b.Name) })
		defs = append(defs, d)
	}
	slices.SortFunc(defs, func(a, b *cupv1alpha1.ResourceDefinition) int { return strings.Compare(a.Name, b.Name) })
	return defs, nil
}
