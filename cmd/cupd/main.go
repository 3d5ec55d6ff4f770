// Command cupd serves cup's API over a Git repository.
//
// With no flags, `cupd` (or `cupd serve`) creates a demo repository from the
// files embedded from examples/demo and serves it on 127.0.0.1:8181.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/cup-dev/cup/internal/app"
	"github.com/cup-dev/cup/internal/auth/certs"
	"github.com/cup-dev/cup/internal/auth/oidc"
	"github.com/cup-dev/cup/internal/buildinfo"
	"github.com/cup-dev/cup/internal/cueeval"
	"github.com/cup-dev/cup/internal/proposals"
	"github.com/cup-dev/cup/internal/registry"
	"github.com/cup-dev/cup/internal/writes"
	"github.com/cup-dev/cup/scm"
	"github.com/cup-dev/cup/server"
	"github.com/cup-dev/cup/source"
	gitsource "github.com/cup-dev/cup/source/git"
	"github.com/cup-dev/cup/web"
)

// processStart is about when the process started: start-up is timed from
// it.
var processStart = time.Now()

// defaultWASMCacheDir is --wasm-cache-dir's default, cup/wasm in the
// user's cache directory; empty, with errNoCacheDir saying why, when there
// is none.
var defaultWASMCacheDir, errNoCacheDir = func() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "cup", "wasm"), nil
}()

func main() {
	cueeval.Worker() // cupd started as a CUE evaluator (see internal/cueeval) does that alone
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRootCommand(os.Stdout, os.Stderr).ExecuteContext(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(1)
	}
}

// serveFlags are the settings of `cupd serve`. Each flag can also be set by
// an environment variable: CUPD_ and the flag's name in upper case with
// underscores, e.g. CUPD_ADDRESS.
type serveFlags struct {
	address         string
	repository      string
	branch          string
	configDir       string
	logLevel        string
	logFormat       string
	maxRequestBytes int64
	cacheBytes      int64
	maxListPage     int
	requestTimeout  time.Duration
	maxWrites       int
	maxJSONDepth    int
	maxResource     int64
	maxInflight     int64
	maxCalls        int
	maxQueuedCalls  int
	wasmMemoryBytes int64
	wasmCacheMax    int64
	wasmReuseBytes  int64
	shutdownTimeout time.Duration
	debugAddress    string
	maxConnections  int
	idleTimeout     time.Duration
	maxHeaderBytes  int
	allowedHosts    []string
	corsOrigins     []string
	ui              bool
	maxWatches      int
	watchBuffer     int
	bookmarkEvery   time.Duration
	watchPoll       time.Duration
	reconcile       bool
	benchTrivial    bool

	writeMode     string
	branchPrefix  string
	authorName    string
	authorEmail   string
	groupMax      int
	groupWait     time.Duration
	cacheDir      string
	fetchInterval time.Duration
	strict        bool
	gitUser       string
	gitToken      string
	gitTokenFile  string
	sshKey        string
	sshPassphrase string
	knownHosts    []string
	webhookSecret string

	scm               string
	scmURL            string
	scmRepository     string
	scmTokenFile      string
	scmTokenEnv       string
	githubAppID       int64
	githubInstallID   int64
	githubAppKeyFile  string
	proposalLabels    []string
	proposalDraft     bool
	templateDir       string
	proposalsRefresh  time.Duration
	scmTimeout        time.Duration
	wasmCacheDir      string
	wasmCacheDirSet   bool // given by flag or environment, not the default
	signingKeyFile    string
	signingPassphrase string

	policy          string
	tokensFile      string
	reloadInterval  time.Duration
	oidc            oidc.Config
	tlsCertFile     string
	tlsKeyFile      string
	tlsClientCAFile string
	tlsRequireCert  bool
}

func newRootCommand(stdout, stderr io.Writer) *cobra.Command {
	var f serveFlags
	serve := &cobra.Command{
		Use:   "serve",
		Short: "Serve the API over a Git repository (the embedded demo when --repository is not set)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyEnv(cmd.Flags(), os.Environ()); err != nil {
				return err
			}
			f.wasmCacheDirSet = cmd.Flags().Changed("wasm-cache-dir")
			return runServe(cmd.Context(), &f, stdout, stderr)
		},
	}
	fl := serve.Flags()
	fl.StringVar(&f.address, "address", "127.0.0.1:8181", "host:port to listen on (port 0 picks a free port)")
	fl.StringVar(&f.repository, "repository", "", "Git repository to serve: a path on this machine, or a URL (https://, ssh://, git@host:path, file://) to clone; empty serves a demo repository built from the embedded examples")
	fl.StringVar(&f.branch, "branch", "", "branch that reads and writes use by default (default: the branch the repository's HEAD names)")
	fl.StringVar(&f.configDir, "config", "", "directory of ResourceDefinition, Controller and APIBinding files; the repository's .cup/ folder is read too")
	fl.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fl.StringVar(&f.logFormat, "log-format", "text", "log format: text or json")
	fl.Int64Var(&f.maxRequestBytes, "max-request-bytes", server.DefaultMaxRequestBytes, "largest request body accepted, in bytes (0: the default)")
	fl.Int64Var(&f.cacheBytes, "cache-bytes", server.DefaultCacheBytes, "memory for resources memoised by commit, in bytes (0: the default)")
	fl.IntVar(&f.maxListPage, "max-list-page", server.DefaultMaxListPage, "most resources one list answer holds; larger pages are refused, unbounded lists get pages of this size (0: no bound)")
	fl.DurationVar(&f.requestTimeout, "request-timeout", server.DefaultRequestTimeout, "longest time one call may take (0: no bound)")
	fl.IntVar(&f.maxWrites, "max-concurrent-writes", server.DefaultMaxConcurrentWrites, "most writes worked on at once; more are refused with RESOURCE_EXHAUSTED (HTTP 429) (0: no bound)")
	fl.IntVar(&f.maxJSONDepth, "max-json-depth", server.DefaultMaxJSONDepth, "deepest nesting of objects and arrays a request's resource may have, the resource itself counting as 1 (2 to 512; 0: the default)")
	fl.Int64Var(&f.maxResource, "max-resource-bytes", server.DefaultMaxResourceBytes, "largest file form (indented JSON) of a resource a write may store, in bytes (0: the default)")
	fl.Int64Var(&f.maxInflight, "max-inflight-request-bytes", server.DefaultMaxInflightRequestBytes, "most bytes of request bodies held at once, all calls together; a call past it is refused with RESOURCE_EXHAUSTED (HTTP 429) (0: no bound)")
	fl.IntVar(&f.maxCalls, "max-concurrent-controller-calls", server.DefaultMaxControllerCalls(), "most controller calls (reads the cache does not answer, and the reads and writes of puts and deletes) run at once; more wait in a queue (default: twice GOMAXPROCS, at least 4) (0: no bound)")
	fl.IntVar(&f.maxQueuedCalls, "max-queued-controller-calls", server.DefaultMaxQueuedControllerCalls, "most controller calls waiting for --max-concurrent-controller-calls, each until its deadline; more are refused with RESOURCE_EXHAUSTED (HTTP 429) (0: no bound)")
	fl.Int64Var(&f.wasmReuseBytes, "wasm-reuse-bytes", app.DefaultWASMReuseBytes, "output of WASM controllers' gets and lists kept, in bytes, to answer the same call again while the files it read are unchanged (0: keep none)")
	fl.Int64Var(&f.wasmMemoryBytes, "wasm-memory-bytes", app.DefaultWASMMemoryBytes, "memory for the WASM controller instances running at once, in bytes: each counts its memoryLimitPages, and calls wait for room (0: no bound)")
	fl.IntVar(&f.maxConnections, "max-connections", app.DefaultMaxConnections, "most client connections open at once; more are closed at once (lowered to fit the open-file limit; 0: no bound)")
	fl.DurationVar(&f.idleTimeout, "idle-timeout", server.DefaultIdleTimeout, "close a keep-alive connection after this long without a request (0: never)")
	fl.IntVar(&f.maxHeaderBytes, "max-header-bytes", server.DefaultMaxHeaderBytes, "largest request line and headers accepted, in bytes; larger get 431 (0: Go's bound, 1 MiB)")
	fl.StringSliceVar(&f.allowedHosts, "allowed-hosts", nil, "host names requests may name in their Host header besides localhost, *.localhost, 127.0.0.1 and [::1] (\"*.example.com\" for subdomains, \"*\" for any); checked when set, and always when --address is a loopback address (a guard against DNS rebinding)")
	fl.StringSliceVar(&f.corsOrigins, "cors-allowed-origins", nil, "origins (scheme://host[:port], one * wildcard allowed) whose web pages may call cupd from a browser, over Connect, gRPC-Web and REST; \"*\" allows any page the user opens, so use it only with --policy (off when empty)")
	fl.IntVar(&f.maxWatches, "max-watches", server.DefaultMaxWatches, "most watches open at once; more are refused with RESOURCE_EXHAUSTED (HTTP 429) (0: the default)")
	fl.IntVar(&f.watchBuffer, "watch-buffer", server.DefaultWatchBuffer, "events a live watch may have waiting to be sent; a watcher further behind is closed with RESOURCE_EXHAUSTED and the revision to resume from (0: the default)")
	fl.DurationVar(&f.bookmarkEvery, "watch-bookmark-interval", server.DefaultWatchBookmarkInterval, "how often a watch that allows bookmarks gets one with the current head (0: the default)")
	fl.BoolVar(&f.ui, "ui", true, "serve the web UI at /ui/, where GET / sends browsers (built into cupd by make ui or make build; a cupd built without it says so at /ui/); false serves none")
	fl.BoolVar(&f.reconcile, "reconcile", true, "run the reconcilers of the configuration; false serves their status and dependency graph without writing outputs (a replica that only reads)")
	fl.DurationVar(&f.watchPoll, "watch-poll-interval", server.DefaultWatchPollInterval, "how often the served branch's head is read while watches are open, to see commits made outside cupd; writes through cupd are seen at once (0: the default)")
	fl.BoolVar(&f.benchTrivial, "bench-trivial", false, "also serve a Connect procedure that does nothing, "+app.TrivialProcedure+", beside the API on the same server (for cupbench; hidden)")
	_ = fl.MarkHidden("bench-trivial")
	fl.StringVar(&f.debugAddress, "debug-address", "", "host:port for /debug/pprof (off when empty; never expose it publicly)")
	fl.DurationVar(&f.shutdownTimeout, "shutdown-timeout", 10*time.Second, "how long to let calls in flight finish on SIGINT or SIGTERM")
	fl.StringVar(&f.writeMode, "write-mode", "", "where writes go: direct (commit on the branch), branch (a new branch cup/<id> per write: a change set) or proposal (a change set and its pull/merge request); default proposal with --scm, else direct")
	fl.StringVar(&f.branchPrefix, "branch-prefix", source.DefaultBranchPrefix, "prefix of the branches --write-mode=branch creates")
	fl.StringVar(&f.authorName, "author-name", source.DefaultAuthorName, "name commits are made under")
	fl.StringVar(&f.authorEmail, "author-email", source.DefaultAuthorEmail, "email commits are made under")
	fl.IntVar(&f.groupMax, "write-group-max", writes.DefaultGroupMax, "group commit: most writes of a branch, queued while a push is in flight, committed together (each its own commit) and published with one push (1: each on its own)")
	fl.DurationVar(&f.groupWait, "write-group-wait", 0, "group commit: how long a group waits for more writes before it is committed (0: no added wait; at most 1s)")
	fl.StringVar(&f.cacheDir, "cache-dir", "", "remote repositories: keep objects in this directory (reused on restart) instead of in memory")
	fl.DurationVar(&f.fetchInterval, "fetch-interval", gitsource.DefaultFetchInterval, "remote repositories: how often to fetch (0 fetches only on POST /hooks/fetch)")
	fl.BoolVar(&f.strict, "strict", false, "remote repositories: fail start-up when the remote is unreachable, even with a warm --cache-dir")
	fl.StringVar(&f.gitUser, "git-user", "", "remote repositories over HTTP(S): user name sent with the token (default \"git\"); over SSH: the SSH user")
	fl.StringVar(&f.gitToken, "git-token", "", "remote repositories over HTTP(S): access token or password (prefer CUPD_GIT_TOKEN or --git-token-file: flags show in process listings)")
	fl.StringVar(&f.gitTokenFile, "git-token-file", "", "remote repositories over HTTP(S): file holding the access token")
	fl.StringVar(&f.sshKey, "ssh-key", "", "remote repositories over SSH: private key file")
	fl.StringVar(&f.sshPassphrase, "ssh-key-passphrase", "", "remote repositories over SSH: passphrase of --ssh-key (prefer CUPD_SSH_KEY_PASSPHRASE)")
	fl.StringSliceVar(&f.knownHosts, "known-hosts", nil, "remote repositories over SSH: known_hosts files (default: ~/.ssh/known_hosts and /etc/ssh/ssh_known_hosts)")
	fl.StringVar(&f.scm, "scm", "", "open proposals on this host: "+registry.SCMs.List("or")+" (off when empty)")
	fl.StringVar(&f.scmURL, "scm-url", "", "the SCM's API base: GitHub Enterprise https://host/api/v3/, a self-hosted GitLab's or Gitea's web root (empty: github.com, gitlab.com)")
	fl.StringVar(&f.scmRepository, "scm-repository", "", "owner/repo on GitHub or Gitea, the project path on GitLab (default: from the --repository URL)")
	fl.StringVar(&f.scmTokenFile, "scm-token-file", "", "file holding the SCM token, read again when it changes (short-lived tokens)")
	fl.StringVar(&f.scmTokenEnv, "scm-token-env", "CUPD_SCM_TOKEN", "environment variable holding the SCM token")
	fl.Int64Var(&f.githubAppID, "github-app-id", 0, "authenticate to GitHub as this App (with --github-app-installation-id and --github-app-key-file)")
	fl.Int64Var(&f.githubInstallID, "github-app-installation-id", 0, "the GitHub App's installation on the repository's account")
	fl.StringVar(&f.githubAppKeyFile, "github-app-key-file", "", "the GitHub App's private key (PEM)")
	fl.StringSliceVar(&f.proposalLabels, "proposal-labels", nil, "labels to add to every proposal")
	fl.BoolVar(&f.proposalDraft, "proposal-draft", false, "open proposals as drafts")
	fl.StringVar(&f.templateDir, "templates", "", "directory with commit.tmpl, title.tmpl and body.tmpl overriding the default commit message and proposal texts")
	fl.DurationVar(&f.proposalsRefresh, "proposals-refresh", proposals.DefaultRefreshInterval, "how often to read the state of proposals from the SCM (POST /hooks/scm reads it at once)")
	fl.DurationVar(&f.scmTimeout, "scm-timeout", scm.DefaultTimeout, "how long one call to the SCM may take (waits for its rate limit excepted)")
	fl.StringVar(&f.wasmCacheDir, "wasm-cache-dir", defaultWASMCacheDir, "keep compiled WASM modules in this directory (made with mode 0700), so that a restart loads them instead of compiling them again; \"\" or \"off\" keeps them in memory only (default: cup/wasm in the user's cache directory)")
	fl.Int64Var(&f.wasmCacheMax, "wasm-cache-max-bytes", app.DefaultWASMCacheMaxBytes, "bound of --wasm-cache-dir, in bytes: the compiled modules written to it longest ago are removed to keep within it (0: no bound)")
	fl.StringVar(&f.signingKeyFile, "signing-key-file", "", "armored OpenPGP private key to sign commits with")
	fl.StringVar(&f.signingPassphrase, "signing-key-passphrase", "", "passphrase of --signing-key-file (prefer CUPD_SIGNING_KEY_PASSPHRASE)")
	fl.StringVar(&f.policy, "policy", "", "file or directory of Role, ClusterRole, RoleBinding and ClusterRoleBinding files; setting it turns authentication and authorization on (see SECURITY.md)")
	fl.StringVar(&f.tokensFile, "tokens-file", "", "file of static bearer tokens' SHA-256 hashes with their users and groups (needs --policy)")
	fl.DurationVar(&f.reloadInterval, "reload-interval", 5*time.Second, "how often --policy and --tokens-file are checked for changes")
	fl.StringVar(&f.oidc.IssuerURL, "oidc-issuer-url", "", "accept JWT bearer tokens from this OpenID Connect issuer (needs --policy and --oidc-audience)")
	fl.StringVar(&f.oidc.Audience, "oidc-audience", "", "the aud claim tokens must carry")
	fl.StringVar(&f.oidc.JWKSURL, "oidc-jwks-url", "", "the issuer's key set (default: from its discovery document)")
	fl.StringVar(&f.oidc.UserClaim, "oidc-user-claim", oidc.DefaultUserClaim, "claim naming the user")
	fl.StringVar(&f.oidc.GroupsClaim, "oidc-groups-claim", oidc.DefaultGroupsClaim, "claim listing the user's groups")
	fl.StringVar(&f.oidc.UserPrefix, "oidc-user-prefix", "", "prefix added to user names from tokens, e.g. oidc:")
	fl.StringVar(&f.oidc.GroupPrefix, "oidc-group-prefix", "", "prefix added to group names from tokens")
	fl.DurationVar(&f.oidc.ClockSkew, "oidc-clock-skew", oidc.DefaultClockSkew, "leeway on the tokens' exp, nbf and iat")
	fl.StringVar(&f.oidc.CAFile, "oidc-ca-file", "", "PEM bundle to trust when reaching the issuer (default: the system's roots)")
	fl.StringVar(&f.tlsCertFile, "tls-cert-file", "", "serve HTTPS with this certificate (PEM; read again when it changes)")
	fl.StringVar(&f.tlsKeyFile, "tls-key-file", "", "the private key of --tls-cert-file")
	fl.StringVar(&f.tlsClientCAFile, "tls-client-ca-file", "", "verify client certificates signed by these CAs and accept them as identities (user: common name, groups: organizations)")
	fl.BoolVar(&f.tlsRequireCert, "tls-require-client-cert", false, "refuse connections without a client certificate signed by --tls-client-ca-file")
	fl.StringVar(&f.webhookSecret, "webhook-secret", "", "remote repositories: secret POST /hooks/fetch requires (GitHub/Gitea signature, GitLab token or Bearer); empty accepts any call")

	root := &cobra.Command{
		Use:           "cupd",
		Short:         "cupd serves a Kubernetes-style API over a Git repository",
		Long:          "cupd serves a Kubernetes-style API over a Git repository.\nWithout a command it runs `serve`; every flag of serve also reads CUPD_<FLAG> from the environment.",
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE:          serve.RunE,
		Version:       buildinfo.Read().String(),
	}
	root.Flags().AddFlagSet(fl)
	root.SetFlagErrorFunc(originalFlagError)
	serve.SetFlagErrorFunc(originalFlagError)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(serve)
	return root
}

// applyEnv sets each flag not given on the command line from CUPD_<NAME>
// in environ (KEY=value entries, as os.Environ returns). A CUPD_ variable
// that names no flag stops start-up, with cupd's name for it when it is one
// of the original Cup's: ignoring it would serve something else than the
// operator asked for. The variable --scm-token-env names is not a flag's.
func applyEnv(fs *pflag.FlagSet, environ []string) error {
	var errs []error
	known := map[string]bool{}
	fs.VisitAll(func(fl *pflag.Flag) {
		name := envName(fl.Name)
		known[name] = true
		if fl.Changed {
			return
		}
		if v, ok := lookup(environ, name); ok {
			if err := fl.Value.Set(v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %w", name, v, err))
			} else {
				fl.Changed = true // given, as by the command line
			}
		}
	})
	if fl := fs.Lookup("scm-token-env"); fl != nil {
		known[fl.Value.String()] = true
	}
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "CUPD_") || known[name] {
			continue
		}
		flag := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(name, "CUPD_"), "_", "-"))
		if hint, ok := originalFlags[flag]; ok {
			errs = append(errs, fmt.Errorf("%s is the original Cup's setting, which cupd does not read: %s", name, hint))
			continue
		}
		errs = append(errs, fmt.Errorf("%s names no flag of cupd serve (each flag --x-y reads CUPD_X_Y): unset it, or see cupd serve --help", name))
	}
	return errors.Join(errs...)
}

// envName is the environment variable of the flag called name.
func envName(name string) string {
	return "CUPD_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// lookup finds name's value in environ; the last entry wins, as for getenv.
func lookup(environ []string, name string) (string, bool) {
	var v string
	var ok bool
	for _, kv := range environ {
		if k, val, _ := strings.Cut(kv, "="); k == name {
			v, ok = val, true
		}
	}
	return v, ok
}

// originalFlags says, for each flag of the original Cup's cupd serve (its
// environment variable is CUPD_ and the name in upper case with
// underscores), what cupd takes instead.
var originalFlags = map[string]string{
	"api-address":         "use --address (CUPD_ADDRESS); the default is 127.0.0.1:8181, not :8181",
	"api-source":          "cupd has no source type: --repository (CUPD_REPOSITORY) takes a path for local and a URL for git",
	"api-local-path":      "use --repository (CUPD_REPOSITORY) with the path",
	"api-git-repo":        "use --repository (CUPD_REPOSITORY) with the URL, and --git-token-file or CUPD_GIT_TOKEN for the credentials the original took from the URL",
	"api-git-scm":         "use --scm (CUPD_SCM), github or gitea (or gitlab), with --scm-token-file or CUPD_SCM_TOKEN; without it writes are direct commits",
	"api-resources":       "use --config (CUPD_CONFIG) with the directory of definitions, controllers and bindings",
	"tailscale-hostname":  "cupd does not join a tailnet: run it behind `tailscale serve` instead",
	"tailscale-auth-key":  "cupd does not join a tailnet: run it behind `tailscale serve` instead",
	"tailscale-ephemeral": "cupd does not join a tailnet: run it behind `tailscale serve` instead",
}

// originalFlagError adds to pflag's error about an unknown flag what cupd
// takes instead when the flag is one of the original Cup's (given as -x or
// --x: pflag reads -api-address as the shorthands -a -p -i ...).
func originalFlagError(_ *cobra.Command, err error) error {
	msg := err.Error()
	for name, hint := range originalFlags {
		if strings.HasSuffix(msg, "-"+name) || strings.Contains(msg, "-"+name+" ") || strings.Contains(msg, "-"+name+"=") {
			return fmt.Errorf("%w: -%s is the original Cup's flag: %s", err, name, hint)
		}
	}
	return err
}

// logUI says where the web UI is served (url), or, when this cupd was
// built without it, how to build it. A nil ui (--ui=false) says nothing.
func logUI(ui server.UI, url string, logger *slog.Logger, stdout io.Writer) {
	switch {
	case ui == nil:
	case ui.Built():
		logger.Info("serving the web UI", "address", url)
		fmt.Fprintf(stdout, "web UI: %s\n", url)
	default:
		logger.Warn("the web UI was not built into this cupd: " + url + " answers 503; run make ui (or make build) and build cupd again")
	}
}

// unbounded turns a flag's 0 ("no bound", "never") into the -1 of
// app.Options and the server's options, whose 0 keeps the default.
func unbounded[T int | int64 | time.Duration](v T) T {
	if v == 0 {
		return -1
	}
	return v
}

// reservedFiles are the open files kept for cupd's own use (repository
// files, Git and SCM connections, the log) when --max-connections is
// fitted to the open-file limit.
const reservedFiles = 256

// fitOpenFileLimit lowers n, a --max-connections value, so that the
// connections leave reservedFiles of the process's open-file limit free
// (or half of a small limit). Zero, no bound, stays so.
// Running out of file descriptors stops everything, /healthz included;
// refusing connections past the limit does not.
func fitOpenFileLimit(n int, logger *slog.Logger) int {
	limit, ok := openFileLimit()
	if n <= 0 || !ok || limit > uint64(1<<31) {
		return n
	}
	fit := max(int(limit)-reservedFiles, int(limit)/2)
	if n > fit {
		logger.Warn("--max-connections lowered to fit the open-file limit", "max_connections", fit, "asked", n, "open_file_limit", limit)
		return fit
	}
	return n
}

// allowedHosts works out the Host headers cupd answers to: any, unless
// the address is loopback or the flag names hosts; then the loopback names
// and those of the flag.
func allowedHosts(address string, flag []string) ([]string, error) {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("--address: %w", err)
	}
	ip := net.ParseIP(host)
	loopback := strings.EqualFold(host, "localhost") || ip != nil && ip.IsLoopback()
	for _, h := range flag {
		if strings.TrimSpace(h) == "*" {
			return nil, nil
		}
	}
	if !loopback && len(flag) == 0 {
		return nil, nil
	}
	return append(slices.Clone(app.LoopbackHosts), flag...), nil
}

func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	default:
		return nil, fmt.Errorf("--log-format: %q is not text or json", format)
	}
}

func runServe(ctx context.Context, f *serveFlags, stdout, stderr io.Writer) error {
	logger, err := newLogger(stderr, f.logLevel, f.logFormat)
	if err != nil {
		return err
	}
	slog.SetDefault(logger)
	wasmCacheDir := f.wasmCacheDir
	switch {
	case wasmCacheDir == "off":
		wasmCacheDir = ""
	case wasmCacheDir == "" && errNoCacheDir != nil && !f.wasmCacheDirSet:
		logger.Info("no user cache directory: WASM modules are compiled in memory, at every start (set --wasm-cache-dir to keep them)", "error", errNoCacheDir)
	}
	tracerProvider, shutdownTracing, err := startTracing(ctx, logger)
	if err != nil {
		return err
	}
	defer stopTracing(shutdownTracing, logger)

	token := f.gitToken
	if f.gitTokenFile != "" {
		b, err := os.ReadFile(f.gitTokenFile)
		if err != nil {
			return fmt.Errorf("--git-token-file: %w", err)
		}
		token = strings.TrimSpace(string(b))
	}
	var tlsConfig *tls.Config
	switch {
	case f.tlsCertFile != "" || f.tlsKeyFile != "":
		if tlsConfig, err = certs.ServerTLS(certs.TLSConfig{
			CertFile: f.tlsCertFile, KeyFile: f.tlsKeyFile,
			ClientCAFile: f.tlsClientCAFile, RequireClientCert: f.tlsRequireCert, Logger: logger,
		}); err != nil {
			return fmt.Errorf("--tls-*: %w", err)
		}
	case f.tlsClientCAFile != "" || f.tlsRequireCert:
		return errors.New("--tls-client-ca-file and --tls-require-client-cert need --tls-cert-file and --tls-key-file")
	}
	if f.groupMax < 1 {
		return fmt.Errorf("--write-group-max: %d: want at least 1 (1 publishes each write on its own)", f.groupMax)
	}
	if f.groupWait < 0 || f.groupWait > writes.MaxGroupWait {
		return fmt.Errorf("--write-group-wait: %v: want 0 to %v", f.groupWait, writes.MaxGroupWait)
	}
	hosts, err := allowedHosts(f.address, f.allowedHosts)
	if err != nil {
		return err
	}
	maxConns := fitOpenFileLimit(f.maxConnections, logger)

	// Bind the port first, so that a busy port is reported at once and
	// probes get answers (not ready yet) during the slow part of start-up.
	ln, err := net.Listen("tcp", f.address)
	if err != nil {
		return fmt.Errorf("--address: %w", err)
	}
	var ui server.UI // nil: none
	if f.ui {
		ui = web.NewHandler(web.Dist())
	}
	var step atomic.Pointer[string] // what start-up does now, for /readyz
	progress := func(s string) {
		step.Store(&s)
		logger.Debug("start-up", "step", s)
	}
	progress("starting")
	starting, err := server.NewStartingHandler(server.WithCORS(f.corsOrigins), server.WithUI(ui),
		server.WithStartingProgress(func() string { return *step.Load() }))
	if err != nil {
		_ = ln.Close()
		return fmt.Errorf("--cors-allowed-origins: %w", err)
	}
	g := newGate(ln, starting)
	srv := server.NewHTTPServer(f.address, g, server.WithIdleTimeout(unbounded(f.idleTimeout)), server.WithMaxHeaderBytes(unbounded(f.maxHeaderBytes)))
	srv.ErrorLog = slog.NewLogLogger(logger.Handler(), slog.LevelWarn)
	srv.ConnState = g.ConnState
	url := "http://" + ln.Addr().String()
	if tlsConfig != nil {
		srv.TLSConfig = tlsConfig
		url = "https://" + ln.Addr().String()
	}
	errc := make(chan error, 1)
	go func() {
		if tlsConfig != nil {
			errc <- srv.ServeTLS(g.listener(), "", "")
			return
		}
		errc <- srv.Serve(g.listener())
	}()
	logger.Info("listening; not ready until start-up ends", "address", url)

	a, err := app.Open(ctx, app.Options{
		Repository:                   f.repository,
		Branch:                       f.branch,
		ConfigDir:                    f.configDir,
		Logger:                       logger,
		MaxRequestBytes:              f.maxRequestBytes,
		CacheBytes:                   f.cacheBytes,
		MaxListPage:                  unbounded(f.maxListPage),
		RequestTimeout:               unbounded(f.requestTimeout),
		MaxConcurrentWrites:          unbounded(f.maxWrites),
		MaxConcurrentControllerCalls: unbounded(f.maxCalls),
		MaxQueuedControllerCalls:     unbounded(f.maxQueuedCalls),
		WASMMemoryBytes:              unbounded(f.wasmMemoryBytes),
		WASMCacheMaxBytes:            unbounded(f.wasmCacheMax),
		WASMReuseBytes:               unbounded(f.wasmReuseBytes),
		MaxJSONDepth:                 f.maxJSONDepth,
		MaxResourceBytes:             f.maxResource,
		MaxInflightRequestBytes:      unbounded(f.maxInflight),
		WriteMode:                    f.writeMode,
		BranchPrefix:                 f.branchPrefix,
		AuthorName:                   f.authorName,
		AuthorEmail:                  f.authorEmail,
		WriteGroupMax:                f.groupMax,
		WriteGroupWait:               f.groupWait,
		WebhookSecret:                f.webhookSecret,
		MaxConnections:               unbounded(maxConns),
		AllowedHosts:                 hosts,
		CORSAllowedOrigins:           f.corsOrigins,
		UI:                           ui,
		MaxWatches:                   f.maxWatches,
		WatchBuffer:                  f.watchBuffer,
		WatchBookmarkInterval:        f.bookmarkEvery,
		WatchPollInterval:            f.watchPoll,
		NoReconcile:                  !f.reconcile,
		BenchTrivial:                 f.benchTrivial,
		SCM: app.SCM{
			Provider: f.scm, URL: f.scmURL, Repository: f.scmRepository,
			TokenFile: f.scmTokenFile, TokenEnv: f.scmTokenEnv,
			GitHubAppID: f.githubAppID, GitHubAppInstallationID: f.githubInstallID, GitHubAppKeyFile: f.githubAppKeyFile,
			Labels: f.proposalLabels, Draft: f.proposalDraft, TemplateDir: f.templateDir, RefreshInterval: f.proposalsRefresh, Timeout: f.scmTimeout,
		},
		Auth: app.Auth{
			PolicyPath: f.policy, TokensFile: f.tokensFile, OIDC: f.oidc,
			ClientCertificates: f.tlsClientCAFile != "", ReloadInterval: f.reloadInterval,
		},
		WASMCacheDir:         wasmCacheDir,
		Progress:             progress,
		TracerProvider:       tracerProvider,
		SigningKeyFile:       f.signingKeyFile,
		SigningKeyPassphrase: f.signingPassphrase,
		Remote: app.Remote{
			CacheDir:         f.cacheDir,
			FetchInterval:    unbounded(f.fetchInterval),
			Strict:           f.strict,
			User:             f.gitUser,
			Token:            token,
			SSHKey:           f.sshKey,
			SSHKeyPassphrase: f.sshPassphrase,
			KnownHosts:       f.knownHosts,
		},
	})
	if err != nil {
		_ = srv.Close()
		<-errc
		return err
	}
	defer a.Close()
	defer srv.Close() // before a.Close: the handler uses what a holds
	runCtx, stopRun := context.WithCancel(ctx)
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		_ = a.Run(runCtx)
	}()
	defer func() { stopRun(); <-ran }()
	srv.RegisterOnShutdown(a.CloseWatches) // watches end at once rather than hold the shutdown
	g.open(a.Handler(), a.Listener, a.ConnState)

	logger.Info("serving", "address", url, "repository", a.Repository(), "branch", a.Branch(), "demo", a.Demo(),
		"startup", time.Since(processStart).Round(time.Millisecond))
	if a.Demo() {
		fmt.Fprintf(stdout, "cupd is serving a demo repository (%s) at %s\n", a.Repository(), url)
	} else {
		fmt.Fprintf(stdout, "cupd is serving %s at %s\n", a.Repository(), url)
	}
	if ex := a.Example(); ex != "" {
		curl := "curl -s"
		if f.policy != "" {
			curl += ` -H "Authorization: Bearer $TOKEN"`
		}
		if tlsConfig != nil {
			curl += " --cacert CA.pem"
		}
		fmt.Fprintf(stdout, "try:\n  %s %s/apis\n  %s %s%s\n", curl, url, curl, url, ex)
	}
	logUI(ui, url+server.UIPath, logger, stdout)

	if f.debugAddress != "" {
		dln, err := net.Listen("tcp", f.debugAddress)
		if err != nil {
			return fmt.Errorf("--debug-address: %w", err)
		}
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		dsrv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = dsrv.Serve(dln) }()
		defer dsrv.Close()
		logger.Info("debug endpoints", "address", "http://"+dln.Addr().String()+"/debug/pprof/")
	}

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down", "timeout", f.shutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), f.shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
