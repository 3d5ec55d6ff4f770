// Package app wires cupd together: it opens the repository (or builds the
// embedded demo), loads the configuration, builds the controllers and
// returns the server's handler. cmd/cupd and the end-to-end tests share it.
package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.opentelemetry.io/otel/trace"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/controller/wasm"
	"github.com/cup-dev/cup/examples"
	"github.com/cup-dev/cup/internal/config"
	"github.com/cup-dev/cup/internal/connlimit"
	"github.com/cup-dev/cup/internal/gitrepo"
	_ "github.com/cup-dev/cup/internal/kinds" // the built-in controller types and SCM providers
	"github.com/cup-dev/cup/internal/proposals"
	"github.com/cup-dev/cup/internal/registry"
	"github.com/cup-dev/cup/internal/signing"
	"github.com/cup-dev/cup/server"
	"github.com/cup-dev/cup/source"
	gitsource "github.com/cup-dev/cup/source/git"
	"github.com/cup-dev/cup/source/local"
)

// Options configure Open.
type Options struct {
	// Repository is the path of the Git repository to serve. Empty builds the
	// demo repository from the embedded examples in a temporary directory.
	Repository string
	// Branch is the default branch; empty for the one HEAD names.
	Branch string
	// ConfigDir is a directory of configuration files, read in addition to
	// the repository's .cup/ folder. Empty reads .cup/ only.
	ConfigDir string
	// Logger receives the server's logs. Nil uses slog.Default().
	Logger *slog.Logger
	// The limits below are passed to the server's options of the same
	// names (server.WithMaxRequestBytes, …), whose rule they follow: zero
	// keeps the server's default (server.DefaultMaxRequestBytes, …), less
	// than zero lifts the bound where there can be none, and is refused
	// where there cannot (MaxRequestBytes, CacheBytes, MaxJSONDepth,
	// MaxResourceBytes).
	MaxRequestBytes              int64
	CacheBytes                   int64
	MaxListPage                  int
	RequestTimeout               time.Duration
	MaxConcurrentWrites          int
	MaxJSONDepth                 int
	MaxResourceBytes             int64
	MaxInflightRequestBytes      int64
	MaxConcurrentControllerCalls int
	MaxQueuedControllerCalls     int
	// Remote configures the source when Repository is a URL.
	Remote Remote
	// WriteMode is where writes go: "direct" (the default) or "branch".
	WriteMode string
	// BranchPrefix is the prefix of change-set branches; empty for "cup/".
	BranchPrefix string
	// AuthorName and AuthorEmail are the identity commits are made as;
	// empty keeps the source's default ("cup <cup@localhost>").
	AuthorName, AuthorEmail string
	// Auth configures authentication and authorization; the zero value
	// leaves both off.
	Auth Auth
	// WebhookSecret, when set, is required of calls to POST /hooks/fetch
	// and POST /hooks/scm.
	WebhookSecret string
	// MaxConnections bounds the connections open at once on the listeners
	// Listener wraps; past it new connections are closed at once. Zero
	// keeps the default, DefaultMaxConnections; less than zero lifts the
	// bound.
	MaxConnections int
	// AllowedHosts are the names the Host header of a request may give
	// (see LoopbackHosts for the form); others get 421 Misdirected
	// Request. Nil allows any.
	AllowedHosts []string
	// CORSAllowedOrigins are the origins whose web pages may call the
	// server from a browser (see server.WithCORS); nil allows none.
	CORSAllowedOrigins []string
	// SCM configures proposals; with a provider the write mode defaults to
	// "proposal".
	SCM SCM
	// SigningKeyFile is an armored OpenPGP private key to sign commits
	// with; SigningKeyPassphrase decrypts it.
	SigningKeyFile, SigningKeyPassphrase string
	// WASMCacheDir keeps compiled WASM modules, so that a restart does not
	// compile them again; empty keeps them in memory.
	WASMCacheDir string
	// WASMMemoryBytes bounds the memory limits of the WASM module
	// instances running at once, in bytes (see wasm.WithMemoryBudget);
	// zero is DefaultWASMMemoryBytes, less than zero no bound.
	WASMMemoryBytes int64
	// WASMRuntime, when set, runs the WASM controllers instead of a runtime
	// of the App's own (WASMCacheDir and WASMMemoryBytes are then ignored);
	// the caller closes it. Apps sharing one compile a module once.
	WASMRuntime *wasm.Runtime
	// TracerProvider receives the spans of calls, of the WASM controllers'
	// module runs (not those of a WASMRuntime the caller made) and of SCM
	// calls. Nil records none.
	TracerProvider trace.TracerProvider
}

// DefaultWASMMemoryBytes is the default memory budget of the WASM module
// instances running at once: 512 MiB, 32 instances at the default memory
// limit of 16 MiB (wasm.DefaultMemoryLimitPages), more than the default
// bound of concurrent controller calls lets run on up to 16 cores. A Go
// module touches about half its limit, so instances take up to some
// 256 MiB of memory together, on top of --cache-bytes.
const DefaultWASMMemoryBytes = 512 << 20

// Remote configures a repository reached over the network.
type Remote struct {
	// CacheDir keeps objects on disk (reused on restart) instead of in memory.
	CacheDir string
	// FetchInterval is how often to fetch; zero keeps
	// gitsource.DefaultFetchInterval, less than zero fetches on webhook
	// calls only.
	FetchInterval time.Duration
	// Strict makes start-up fail when the remote is unreachable, even with a warm cache.
	Strict bool
	// User and Token (or Password) authenticate over HTTP(S).
	User, Token string
	// SSHKey, SSHKeyPassphrase and KnownHosts authenticate over SSH.
	SSHKey, SSHKeyPassphrase string
	KnownHosts               []string
}

// repoSource is what App needs of a source beyond source.Source.
type repoSource interface {
	source.Source
	DefaultBranch() (string, error)
	Close() error
}

// App is a wired server.
type App struct {
	handler   http.Handler
	src       repoSource
	remote    *gitsource.Source  // nil for a local repository
	proposals *proposals.Manager // nil without an SCM
	access    *access            // nil without a policy
	wasm      *wasm.Runtime      // runs the WASM controllers, when the App made it
	repo      string
	branch    string
	demo      bool
	example   string
	conns     *connlimit.Limiter
	cleanup   func()
}

// configFolder is the folder inside a served repository that holds configuration.
const configFolder = ".cup"

// Open wires a server from opts. Invalid configuration fails with the file
// name and the problem.
func Open(ctx context.Context, opts Options) (_ *App, err error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	a := &App{repo: opts.Repository, cleanup: func() {}}
	defer func() {
		if err != nil {
			_ = a.Close()
		}
	}()
	if a.repo == "" {
		if err := a.buildDemo(ctx, opts.Logger); err != nil {
			return nil, err
		}
	}

	mode, propose, err := writeMode(opts)
	if err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
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

	set, modules, err := loadConfig(ctx, src, opts.ConfigDir)
	if err != nil {
		return nil, err
	}
	if len(set.Skipped) > 0 {
		opts.Logger.InfoContext(ctx, "skipped files that hold no configuration (no document with apiVersion cup.dev/v1alpha1 or cup.flipt.io/v1alpha1)",
			"files", set.Skipped)
	}
	rt := opts.WASMRuntime
	if rt == nil {
		budget := opts.WASMMemoryBytes
		if budget == 0 {
			budget = DefaultWASMMemoryBytes
		}
		ropts := []wasm.RuntimeOption{wasm.WithLogger(opts.Logger), wasm.WithMemoryBudget(budget), wasm.WithMetrics(reg), wasm.WithTracerProvider(opts.TracerProvider)}
		if opts.WASMCacheDir != "" {
			ropts = append(ropts, wasm.WithCacheDir(opts.WASMCacheDir))
		}
		if a.wasm, err = wasm.NewRuntime(ropts...); err != nil {
			return nil, err
		}
		rt = a.wasm
	}
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
	)
	sopts = append(sopts, server.WithMetrics(reg),
		server.WithCORS(opts.CORSAllowedOrigins), server.WithRepository(gitsource.Redact(a.repo), a.branch))
	if a.proposals != nil {
		sopts = append(sopts, server.WithProposals(proposalsAPI{a.proposals}))
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
	a.handler = withHosts(withOperations(srv.Handler(), a.remote, a.proposals, reg, opts.WebhookSecret, opts.Logger), opts.AllowedHosts)
	if len(types) > 0 {
		t := types[0]
		a.example = fmt.Sprintf("/apis/%s/%s/namespaces/default/%s", t.Group, t.Version, t.Plural)
	}
	return a, nil
}

// openSource opens the local or remote source opts name; a remote one
// exports its fetch and push metrics to reg.
func (a *App) openSource(ctx context.Context, opts Options, mode source.WriteMode, reg prometheus.Registerer) (repoSource, error) {
	prefix := or(opts.BranchPrefix, source.DefaultBranchPrefix)
	var signer source.Signer
	if opts.SigningKeyFile != "" {
		key, err := os.ReadFile(opts.SigningKeyFile)
		if err != nil {
			return nil, fmt.Errorf("--signing-key-file: %w", err)
		}
		s, err := signing.NewOpenPGP(key, []byte(opts.SigningKeyPassphrase))
		if err != nil {
			return nil, fmt.Errorf("--signing-key-file %s: %w", opts.SigningKeyFile, err)
		}
		opts.Logger.Info("signing commits", "key", s.Fingerprint())
		signer = s
	}
	if !gitsource.IsURL(a.repo) {
		lopts := []local.Option{local.WithLogger(opts.Logger), local.WithWriteMode(mode), local.WithBranchPrefix(prefix), local.WithSigner(signer)}
		if opts.Branch != "" {
			lopts = append(lopts, local.WithBranch(opts.Branch))
		}
		if opts.AuthorName != "" || opts.AuthorEmail != "" {
			lopts = append(lopts, local.WithAuthor(or(opts.AuthorName, "cup"), or(opts.AuthorEmail, "cup@localhost")))
		}
		return local.Open(a.repo, lopts...)
	}
	r := opts.Remote
	gopts := []gitsource.Option{
		gitsource.WithLogger(opts.Logger),
		gitsource.WithWriteMode(mode),
		gitsource.WithBranchPrefix(prefix),
		gitsource.WithCacheDir(r.CacheDir),
		gitsource.WithFetchInterval(r.FetchInterval),
		gitsource.WithStrict(r.Strict),
		gitsource.WithSigner(signer),
		gitsource.WithMetrics(reg),
	}
	if opts.Branch != "" {
		gopts = append(gopts, gitsource.WithBranch(opts.Branch))
	}
	if opts.AuthorName != "" || opts.AuthorEmail != "" {
		gopts = append(gopts, gitsource.WithAuthor(or(opts.AuthorName, "cup"), or(opts.AuthorEmail, "cup@localhost")))
	}
	switch {
	case r.SSHKey != "":
		auth, err := gitsource.SSHKeyAuth(r.User, r.SSHKey, r.SSHKeyPassphrase, r.KnownHosts...)
		if err != nil {
			return nil, err
		}
		gopts = append(gopts, gitsource.WithAuth(auth))
	case r.Token != "":
		gopts = append(gopts, gitsource.WithAuth(gitsource.TokenAuth(r.User, r.Token)))
	}
	src, err := gitsource.Open(a.repo, gopts...)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if err := src.Start(ctx); err != nil {
		_ = src.Close()
		return nil, err
	}
	opts.Logger.Info("repository ready", "url", gitsource.Redact(a.repo), "took", time.Since(start).Round(time.Millisecond))
	a.remote = src
	return src, nil
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// writeMode works out the source's write mode and whether writes are
// proposed: "proposal" (the default with an SCM) is a branch write plus a
// proposal.
func writeMode(opts Options) (source.WriteMode, bool, error) {
	switch m := opts.WriteMode; {
	case m == "proposal" || m == "" && opts.SCM.Provider != "":
		if opts.SCM.Provider == "" {
			return 0, false, fmt.Errorf("--write-mode=proposal needs --scm (%s)", registry.SCMs.List("or"))
		}
		return source.ModeBranch, true, nil
	case m == "":
		return source.ModeDirect, false, nil
	default:
		mode, err := source.ParseWriteMode(m)
		if err != nil {
			return 0, false, fmt.Errorf("--write-mode: %w (or proposal)", err)
		}
		return mode, false, nil
	}
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
	if a.remote == nil {
		<-ctx.Done()
		return nil
	}
	return a.remote.Run(ctx)
}

// buildDemo creates the demo repository from the embedded examples, with
// the WASM module of its Segment type from [examples.DemoWASM], which
// builds it at the first start from a checkout. Without the module the
// demo is served without that type.
func (a *App) buildDemo(ctx context.Context, log *slog.Logger) error {
	dir, err := os.MkdirTemp("", "cup-demo-*")
	if err != nil {
		return fmt.Errorf("creating the demo repository: %w", err)
	}
	a.cleanup = func() { _ = os.RemoveAll(dir) }
	files, err := examples.DemoFiles()
	if err != nil {
		return fmt.Errorf("reading the embedded demo: %w", err)
	}
	delete(files, "README.md")
	if b, err := examples.DemoWASM(ctx); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("building the demo's WASM module: %w", err)
		}
		log.Warn("serving the demo without its Segment type: its WASM module is not embedded and cannot be built (run `make build`, or start cupd in a checkout with the go command on PATH)",
			"error", err)
		delete(files, examples.DemoWASMConfig)
	} else {
		files[examples.DemoWASMFile] = b
	}
	if _, err := gitrepo.Init(dir, "main", files, "Demo repository for cup"); err != nil {
		return fmt.Errorf("creating the demo repository: %w", err)
	}
	a.repo, a.demo = dir, true
	return nil
}

// loadConfig reads the configuration directory and the .cup/ folder of the
// default branch, and merges them. It also reads the modules of WASM
// controllers, by controller name: a module's path is relative to the
// file declaring its controller, in the repository's commit for .cup/ and
// on disk for the configuration directory.
func loadConfig(ctx context.Context, src source.Source, dir string) (*config.Set, map[string]map[string][]byte, error) {
	snap, err := src.View(ctx, "")
	if err != nil {
		return nil, nil, fmt.Errorf("reading the default branch: %w", err)
	}
	modules := map[string]map[string][]byte{}
	set := &config.Set{}
	if _, err := fs.Stat(snap.FS, configFolder); err == nil {
		if set, err = config.Parse(snap.FS, configFolder); err != nil {
			return nil, nil, fmt.Errorf("configuration in the repository (commit %s): %w", snap.Commit[:12], err)
		}
		if err := readModules(set, snap.FS, modules); err != nil {
			return nil, nil, fmt.Errorf("configuration in the repository (commit %s): %w", snap.Commit[:12], err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("reading %s/ in the repository: %w", configFolder, err)
	}
	if dir != "" {
		fromDir, err := config.Parse(os.DirFS(dir), ".")
		if err != nil {
			return nil, nil, fmt.Errorf("configuration in %s: %w", dir, err)
		}
		if err := readModules(fromDir, os.DirFS(dir), modules); err != nil {
			return nil, nil, fmt.Errorf("configuration in %s: %w", dir, err)
		}
		for i, f := range fromDir.Skipped {
			fromDir.Skipped[i] = filepath.Join(dir, filepath.FromSlash(f))
		}
		if set, err = set.Merge(fromDir); err != nil {
			return nil, nil, err
		}
	} else if set, err = set.Merge(&config.Set{}); err != nil {
		return nil, nil, fmt.Errorf("configuration in the repository (commit %s): %w", snap.Commit[:12], err)
	}
	if len(set.Bindings) == 0 {
		return nil, nil, fmt.Errorf("no APIBinding configured: add configuration to --config or to %s/ in the repository", configFolder)
	}
	return set, modules, nil
}

// maxModuleBytes bounds the size of a file a controller needs (a WASM
// module).
const maxModuleBytes = 256 << 20

// readModules reads into modules the files each controller of set needs
// (the module of a WASM controller), as its kind in registry.Controllers
// names them, from fsys, where the set was loaded from.
func readModules(set *config.Set, fsys fs.FS, modules map[string]map[string][]byte) error {
	for _, c := range set.Controllers {
		kind, ok := registry.Controllers.Lookup(c.Type)
		if !ok || kind.Files == nil {
			continue
		}
		files, err := kind.Files(c.Spec)
		if err != nil {
			return fmt.Errorf("%s: controller %q: %w", c.Location, c.Name, err)
		}
		for _, f := range files {
			if strings.HasPrefix(f.Path, "/") {
				// path.Join would quietly make it relative, and the error
				// would name a file nobody wrote.
				return fmt.Errorf("%s: controller %q: %s path %q is absolute: give it relative to the folder of %s, inside the configuration's tree",
					c.Location, c.Name, f.What, f.Path, path.Base(c.Location.File))
			}
			p := path.Join(path.Dir(c.Location.File), f.Path)
			if !fs.ValidPath(p) {
				return fmt.Errorf("%s: controller %q: %s path %q leaves the configuration's tree", c.Location, c.Name, f.What, f.Path)
			}
			fi, err := fs.Stat(fsys, p)
			if err == nil && fi.Size() > maxModuleBytes {
				err = fmt.Errorf("%d bytes, more than %d", fi.Size(), maxModuleBytes)
			}
			var b []byte
			if err == nil {
				b, err = fs.ReadFile(fsys, p)
			}
			if err != nil {
				return fmt.Errorf("%s: controller %q: reading %s %s: %w", c.Location, c.Name, f.What, p, err)
			}
			if modules[c.Name] == nil {
				modules[c.Name] = map[string][]byte{}
			}
			modules[c.Name][f.Path] = b
		}
	}
	return nil
}

// Modules are the files the controllers of a configuration need (WASM
// modules) and the runtime that runs WASM modules.
type Modules struct {
	Runtime *wasm.Runtime
	// Files holds the files each controller's kind named, by controller
	// name and then by the path the controller's spec gives.
	Files map[string]map[string][]byte
}

// LoadTypes reads the configuration in directory dir of fsys (and the
// modules of its WASM controllers, which rt runs) and builds its served
// types, as cupd does for a repository's .cup/ folder.
func LoadTypes(ctx context.Context, fsys fs.FS, dir string, rt *wasm.Runtime) ([]*server.Type, error) {
	set, err := config.Load(fsys, dir)
	if err != nil {
		return nil, err
	}
	modules := map[string]map[string][]byte{}
	if err := readModules(set, fsys, modules); err != nil {
		return nil, err
	}
	return BuildTypes(ctx, set, &Modules{Runtime: rt, Files: modules})
}

// BuildTypes builds the served types of a configuration: a controller per
// Controller resource, by the factory its type registered in
// registry.Controllers (WASM modules are compiled now, with mods), a type
// per bound definition version.
func BuildTypes(ctx context.Context, set *config.Set, mods *Modules) ([]*server.Type, error) {
	if mods == nil {
		mods = &Modules{}
	}
	ctrls := map[string]controller.Controller{}
	for _, c := range set.Controllers {
		kind, ok := registry.Controllers.Lookup(c.Type)
		if !ok {
			return nil, fmt.Errorf("%s: controller %q: type %q is not supported by this build", c.Location, c.Name, c.Type)
		}
		ctrl, err := kind.New(ctx, registry.ControllerConfig{Name: c.Name, Spec: c.Spec, Files: mods.Files[c.Name], WASM: mods.Runtime})
		if err != nil {
			return nil, fmt.Errorf("%s: controller %q: %w", c.Location, c.Name, err)
		}
		ctrls[c.Name] = ctrl
	}
	defs := map[string]*config.Definition{}
	for _, d := range set.Definitions {
		defs[d.Group+"/"+d.Names.Plural] = d
	}
	var types []*server.Type
	for _, b := range set.Bindings {
		for _, ref := range b.Resources {
			d := defs[ref.Group+"/"+ref.Plural]
			if d == nil {
				return nil, fmt.Errorf("%s: binding %q: no definition of %s/%s", b.Location, b.Name, ref.Group, ref.Plural)
			}
			v, ok := d.Version(ref.Version)
			if !ok {
				return nil, fmt.Errorf("%s: binding %q: definition %s has no version %q", b.Location, b.Name, d.Name, ref.Version)
			}
			types = append(types, &server.Type{
				Type:         controller.Type{Group: d.Group, Version: v.Name, Kind: d.Names.Kind, Plural: d.Names.Plural},
				Singular:     d.Names.Singular,
				ShortNames:   d.Names.ShortNames,
				Schema:       v.Schema,
				SchemaTarget: string(v.Target),
				Validate:     validator(v),
				Controller:   ctrls[b.Controller],
			})
		}
	}
	sort.Slice(types, func(i, j int) bool {
		return path.Join(types[i].Group, types[i].Version, types[i].Plural) < path.Join(types[j].Group, types[j].Version, types[j].Plural)
	})
	return types, nil
}

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
	if a.wasm != nil {
		errs = append(errs, a.wasm.Close(context.Background()))
	}
	a.cleanup()
	return errors.Join(errs...)
}

// validator adapts a definition version's JSON Schema to the server.
func validator(v *config.Version) func(any) []server.FieldViolation {
	return func(doc any) []server.FieldViolation {
		err := v.Validate(doc)
		if err == nil {
			return nil
		}
		var ve *config.ValidationError
		if !errors.As(err, &ve) {
			return []server.FieldViolation{{Description: err.Error()}}
		}
		out := make([]server.FieldViolation, 0, len(ve.Violations))
		for _, x := range ve.Violations {
			out = append(out, server.FieldViolation{Field: fieldPath(x.Path), Description: x.Message})
		}
		return out
	}
}

// fieldPath turns a JSON pointer ("/spec/variants/0/key") into a field path
// ("spec.variants[0].key").
func fieldPath(pointer string) string {
	if pointer == "" || pointer == "/" {
		return ""
	}
	var b strings.Builder
	for i, tok := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		if _, err := strconv.Atoi(tok); err == nil && i > 0 {
			b.WriteString("[" + tok + "]")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
	}
	return b.String()
}
