// Options: how cupd is configured to open its repository and serve it.

package app

import (
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/cup-dev/cup/controller/wasm"
	"github.com/cup-dev/cup/server"
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
	MaxWatches                   int
	WatchBuffer                  int
	WatchBookmarkInterval        time.Duration
	WatchPollInterval            time.Duration
	// NoReconcile serves the reconcilers' status and graph without running
	// them: a replica that never writes outputs.
	NoReconcile bool
	// BenchTrivial also serves a Connect unary procedure that does nothing,
	// [TrivialProcedure], on the same HTTP server, connection limit and
	// host check as the API but past none of the API's handlers and
	// interceptors: the floor that cupbench compares the API's reads with.
	BenchTrivial bool
	// Remote configures the source when Repository is a URL.
	Remote Remote
	// WriteMode is where writes go: "direct" (the default) or "branch".
	WriteMode string
	// BranchPrefix is the prefix of change-set branches; empty for "cup/".
	BranchPrefix string
	// AuthorName and AuthorEmail are the identity commits are made as;
	// empty keeps the source's default ("cup <cup@localhost>").
	AuthorName, AuthorEmail string
	// WriteGroupMax bounds how many queued writes of a branch are
	// committed together and published with one push (group commit);
	// zero keeps the default (64), 1 publishes each on its own.
	WriteGroupMax int
	// WriteGroupWait is how long a group waits to fill; zero adds no wait.
	WriteGroupWait time.Duration
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
	// UI is the web app served at /ui/ (see server.WithUI), such as
	// web.NewHandler(web.Dist()); nil serves none.
	UI server.UI
	// SCM configures proposals; with a provider the write mode defaults to
	// "proposal".
	SCM SCM
	// SigningKeyFile is an armored OpenPGP private key to sign commits
	// with; SigningKeyPassphrase decrypts it.
	SigningKeyFile, SigningKeyPassphrase string
	// WASMCacheDir keeps compiled WASM modules, so that a restart does not
	// compile them again; empty keeps them in memory.
	WASMCacheDir string
	// WASMCacheMaxBytes bounds WASMCacheDir (see wasm.WithCacheMaxBytes);
	// zero is DefaultWASMCacheMaxBytes, less than zero no bound.
	WASMCacheMaxBytes int64
	// WASMMemoryBytes bounds the memory limits of the WASM module
	// instances running at once, in bytes (see wasm.WithMemoryBudget);
	// zero is DefaultWASMMemoryBytes, less than zero no bound.
	WASMMemoryBytes int64
	// WASMReuseBytes bounds the output of WASM gets and lists kept to
	// answer the same call while what it read is unchanged (see
	// wasm.WithReuseBytes); zero is wasm.DefaultReuseBytes, less than
	// zero keeps none.
	WASMReuseBytes int64
	// WASMRuntime, when set, runs the WASM controllers instead of a runtime
	// of the App's own (WASMCacheDir, WASMCacheMaxBytes, WASMMemoryBytes
	// and WASMReuseBytes are then ignored);
	// the caller closes it. Apps sharing one compile a module once.
	WASMRuntime *wasm.Runtime
	// Progress, when set, is told what start-up does as each step begins
	// ("loading the configuration", "compiling WASM modules 1/2
	// (flagbundle.wasm)"), for a readiness probe to report. Open calls it
	// from its own goroutine, and from those compiling modules, one call
	// at a time.
	Progress func(step string)
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

// DefaultWASMReuseBytes bounds the output of WASM gets and lists kept for
// reuse (wasm.DefaultReuseBytes): the output of a list of 10,000 resources
// of the example flagfile module is 7 MB.
const DefaultWASMReuseBytes = wasm.DefaultReuseBytes

// DefaultWASMCacheMaxBytes bounds the WASM compilation cache directory:
// a Go module of 5 MB compiles to some 20 MB, so about 50 of them.
const DefaultWASMCacheMaxBytes = 1 << 30

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
