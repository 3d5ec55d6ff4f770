// Package app wires cupd together: it opens the repository (or builds the
// embedded demo), loads the configuration, builds the controllers and
// returns the server's handler. cmd/cupd and the end-to-end tests share it.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/cup-dev/cup/controller/wasm"
	"github.com/cup-dev/cup/internal/connlimit"
	_ "github.com/cup-dev/cup/internal/kinds" // the built-in controller types and SCM providers
	"github.com/cup-dev/cup/internal/proposals"
	"github.com/cup-dev/cup/runtime"
	"github.com/cup-dev/cup/runtime/cuelayers"
	"github.com/cup-dev/cup/server"
	"github.com/cup-dev/cup/source"
	gitsource "github.com/cup-dev/cup/source/git"
)

// App is a wired server.
type App struct {
	handler   http.Handler
	server    *server.Server
	src       repoSource
	remote    *gitsource.Source  // nil for a local repository
	proposals *proposals.Manager // nil without an SCM
	access    *access            // nil without a policy
	wasm      *wasm.Runtime      // runs the WASM controllers, when the App made it
	runtime   *runtime.Runtime   // nil without reconcilers
	// noReconcile serves the runtime's status and graph without running it.
	noReconcile bool
	repo        string
	branch      string
	demo        bool
	example     string
	conns       *connlimit.Limiter
	cleanup     func()
}

// Open wires a server from opts. Invalid configuration fails with the file
// name and the problem.
func Open(ctx context.Context, opts Options) (_ *App, err error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	a := &App{repo: opts.Repository, cleanup: func() {}, noReconcile: opts.NoReconcile}
	defer func() {
		if err != nil {
			_ = a.Close()
		}
	}()
	st := newStartup(opts)
	mode, propose, err := writeMode(opts)
	if err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	rt := opts.WASMRuntime
	if rt == nil {
		budget := opts.WASMMemoryBytes
		if budget == 0 {
			budget = DefaultWASMMemoryBytes
		}
		ropts := []wasm.RuntimeOption{wasm.WithLogger(opts.Logger), wasm.WithMemoryBudget(budget), wasm.WithMetrics(reg),
			wasm.WithTracerProvider(opts.TracerProvider), wasm.WithReuseBytes(opts.WASMReuseBytes)}
		if opts.WASMCacheDir != "" {
			maxBytes := opts.WASMCacheMaxBytes
			if maxBytes == 0 {
				maxBytes = DefaultWASMCacheMaxBytes
			}
			ropts = append(ropts, wasm.WithCacheDir(opts.WASMCacheDir), wasm.WithCacheMaxBytes(max(maxBytes, 0)))
		}
		if a.wasm, err = wasm.NewRuntime(ropts...); err != nil {
			return nil, err
		}
		rt = a.wasm
	}
	if a.repo == "" {
		finish, err := a.buildDemo(ctx, opts.Logger, st, rt)
		// The demo's modules compiled while its repository was made and
		// its configuration read; the controllers hold them once built.
		defer func() { _ = finish(context.WithoutCancel(ctx)) }()
		if err != nil {
			return nil, err
		}
	}

	if gitsource.IsURL(a.repo) {
		st.step(phaseRepository, "fetching the repository "+gitsource.Redact(a.repo))
	} else {
		st.step(phaseRepository, "opening the repository")
	}
	src, err := a.openSource(ctx, opts, mode, reg)
	if err != nil {
		return nil, fmt.Errorf("opening repository %s: %w", gitsource.Redact(a.repo), err)
	}
	a.src = src
	if a.branch, err = src.DefaultBranch(); err != nil {
		return nil, fmt.Errorf("opening repository %s: %w", gitsource.Redact(a.repo), err)
	}
	a.conns = newConnLimiter(opts, reg)
	var served source.Source = src
	if propose {
		if a.remote == nil {
			return nil, errors.New("--write-mode=proposal needs a remote repository (an https://, ssh:// or git@ URL) that the SCM hosts")
		}
		provider, err := newProvider(opts.SCM, a.repo, reg, opts.TracerProvider, opts.Logger)
		if err != nil {
			return nil, err
		}
		var tmpl *proposals.Templates // nil: the defaults
		if opts.SCM.TemplateDir != "" {
			if tmpl, err = proposals.LoadTemplates(opts.SCM.TemplateDir); err != nil {
				return nil, err
			}
		}
		a.proposals, err = proposals.New(proposals.Config{
			Source: src, Provider: provider, DefaultBranch: a.branch,
			BranchPrefix: opts.BranchPrefix,
			Labels:       opts.SCM.Labels, Draft: opts.SCM.Draft, Templates: tmpl,
			RefreshInterval: opts.SCM.RefreshInterval, Logger: opts.Logger,
		})
		if err != nil {
			return nil, err
		}
		served = a.proposals
	}

	st.step(phaseConfiguration, "loading the configuration")
	set, modules, err := loadConfig(ctx, src, opts.ConfigDir)
	if err != nil {
		return nil, err
	}
	if len(set.Skipped) > 0 {
		opts.Logger.InfoContext(ctx, "skipped files that hold no configuration (no document with apiVersion cup.dev/v1alpha1 or cup.flipt.io/v1alpha1)",
			"files", set.Skipped)
	}
	// Compiled all at once here, each module is found compiled as the
	// controllers and reconcilers are built below, one after the other.
	release := st.precompile(ctx, rt, modules)
	defer func() { _ = release(context.WithoutCancel(ctx)) }()
	st.step(phaseBuild, "building the controllers, the server and the reconcilers")
	types, err := BuildTypes(ctx, set, &Modules{Runtime: rt, Files: modules})
	if err != nil {
		return nil, err
	}
	var sopts []server.Option
	sopts = append(sopts, server.WithLogger(opts.Logger), server.WithTracerProvider(opts.TracerProvider))
	// The server's options take zero for their defaults and less than
	// zero for no bound, as Options does: the values pass through.
	sopts = append(sopts,
		server.WithMaxRequestBytes(opts.MaxRequestBytes),
		server.WithCacheBytes(opts.CacheBytes),
		server.WithMaxListPage(opts.MaxListPage),
		server.WithRequestTimeout(opts.RequestTimeout),
		server.WithMaxConcurrentWrites(opts.MaxConcurrentWrites),
		server.WithMaxJSONDepth(opts.MaxJSONDepth),
		server.WithMaxResourceBytes(opts.MaxResourceBytes),
		server.WithMaxInflightRequestBytes(opts.MaxInflightRequestBytes),
		server.WithMaxConcurrentControllerCalls(opts.MaxConcurrentControllerCalls),
		server.WithMaxQueuedControllerCalls(opts.MaxQueuedControllerCalls),
		server.WithMaxWatches(opts.MaxWatches),
		server.WithWatchBuffer(opts.WatchBuffer),
		server.WithWatchBookmarkInterval(opts.WatchBookmarkInterval),
		server.WithWatchPollInterval(opts.WatchPollInterval),
	)
	sopts = append(sopts, server.WithMetrics(reg),
		server.WithCORS(opts.CORSAllowedOrigins), server.WithRepository(gitsource.Redact(a.repo), a.branch),
		server.WithUI(opts.UI))
	if a.proposals != nil {
		sopts = append(sopts, server.WithProposals(proposalsAPI{a.proposals}))
	}
	if a.remote != nil {
		// A watch resuming on this replica from a commit another pushed.
		sopts = append(sopts, server.WithCatchUp(a.remote.Fetch))
	}
	if a.access, err = newAccess(opts.Auth, opts.Logger); err != nil {
		return nil, err
	}
	if a.access != nil {
		sopts = append(sopts, server.WithAuthorization(a.access.authn, a.access.policy))
	}
	srv, err := server.New(served, types, sopts...)
	if err != nil {
		return nil, err
	}
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "cup_request_body_bytes_held",
			Help: "Bytes of request bodies counted against --max-inflight-request-bytes now.",
		}, func() float64 { return float64(srv.BodyStats().Held) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "cup_request_body_refused_total",
			Help: "Calls refused because --max-inflight-request-bytes was reached.",
		}, func() float64 { return float64(srv.BodyStats().Refused) }),
	)
	a.server = srv
	if len(set.Reconcilers) > 0 {
		if !opts.NoReconcile {
			if err := checkWriteModes(set, mode); err != nil {
				return nil, err
			}
		}
		rs, err := BuildReconcilers(ctx, set, types, &Modules{Runtime: rt, Files: modules}, srv.ReconcileStore().(cuelayers.Store))
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			if r.Write.Mode == "" { // as cupd writes
				r.Write.Mode = runtime.WriteDirect
				if mode == source.ModeBranch {
					r.Write.Mode = runtime.WriteProposal
				}
			}
		}
		if a.runtime, err = runtime.New(srv.ReconcileStore(), rs, runtime.Options{
			Logger: opts.Logger, Metrics: runtime.NewMetrics(reg),
		}); err != nil {
			return nil, err
		}
		srv.SetReconcilers(a.runtime)
	}
	ops := withOperations(srv.Handler(), a.remote, a.proposals, reg, opts.WebhookSecret, opts.Logger)
	if opts.BenchTrivial {
		ops = withTrivial(ops)
		opts.Logger.WarnContext(ctx, "serving the benchmark's trivial procedure (--bench-trivial)", "procedure", TrivialProcedure)
	}
	a.handler = withHosts(ops, opts.AllowedHosts)
	st.register(reg)
	if len(types) > 0 {
		t := types[0]
		a.example = fmt.Sprintf("/apis/%s/%s/namespaces/default/%s", t.Group, t.Version, t.Plural)
	}
	return a, nil
}

// Run keeps a remote repository, the list of proposals, and the policy and
// tokens files fresh until ctx is done.
func (a *App) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	if a.proposals != nil {
		wg.Go(func() { _ = a.proposals.Run(ctx) })
	}
	if a.access != nil {
		wg.Go(func() { a.access.run(ctx) })
	}
	if a.runtime != nil && !a.noReconcile {
		wg.Go(func() { _ = a.runtime.Run(ctx) })
	}
	if a.remote == nil {
		<-ctx.Done()
		return nil
	}
	return a.remote.Run(ctx)
}

// CloseWatches ends the server's watches (server.Server.CloseWatches), as
// the HTTP server shuts down.
func (a *App) CloseWatches() { a.server.CloseWatches() }

// Handler is the server's HTTP handler.
func (a *App) Handler() http.Handler { return a.handler }

// Listener wraps ln so that it holds no more connections open than
// Options.MaxConnections, counting them in the metrics
// cup_connections_open and cup_connections_refused_total (and showing the
// limit in cup_connections_limit).
func (a *App) Listener(ln net.Listener) net.Listener { return a.conns.Listen(ln) }

// ConnState is the http.Server's ConnState for connections of Listener:
// it tells the connection limit which connections carry no request, so
// that those make room for new ones at the limit.
func (a *App) ConnState(c net.Conn, s http.ConnState) { a.conns.ConnState(c, s) }

// DefaultMaxConnections is Options.MaxConnections' default (and so that
// of cupd --max-connections).
const DefaultMaxConnections = 4096

// newConnLimiter returns the limiter of opts.MaxConnections, with its
// metrics registered in reg.
func newConnLimiter(opts Options, reg *prometheus.Registry) *connlimit.Limiter {
	n := opts.MaxConnections
	switch {
	case n == 0:
		n = DefaultMaxConnections
	case n < 0:
		n = 0
	}
	l := connlimit.New(n, connlimit.WithLogger(opts.Logger))
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "cup_connections_open", Help: "Client connections open now.",
		}, func() float64 { return float64(l.Open()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "cup_connections_limit", Help: "Client connections allowed open at once (--max-connections); 0 for no limit.",
		}, func() float64 { return float64(l.Limit()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "cup_connections_refused_total", Help: "Client connections closed at once because --max-connections were open, all busy.",
		}, func() float64 { return float64(l.Refused()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "cup_connections_evicted_total", Help: "Idle client connections closed to make room for new ones at --max-connections.",
		}, func() float64 { return float64(l.Evicted()) }),
	)
	return l
}

// Source is the repository source.
func (a *App) Source() source.Source { return a.src }

// Repository is the path or URL (without credentials) of the served repository.
func (a *App) Repository() string { return gitsource.Redact(a.repo) }

// Branch is the default branch.
func (a *App) Branch() string { return a.branch }

// Demo reports whether the app serves the embedded demo.
func (a *App) Demo() bool { return a.demo }

// Example is the REST path of a listing worth trying.
func (a *App) Example() string { return a.example }

// Close releases what Open created: open files and the demo repository.
func (a *App) Close() error {
	var errs []error
	if a.src != nil {
		errs = append(errs, a.src.Close())
	}
	if a.runtime != nil {
		for _, r := range a.runtime.Reconcilers() {
			if c, ok := r.Transform.(interface{ Close(context.Context) error }); ok {
				errs = append(errs, c.Close(context.Background()))
			}
		}
	}
	if a.wasm != nil {
		errs = append(errs, a.wasm.Close(context.Background()))
	}
	a.cleanup()
	return errors.Join(errs...)
}
