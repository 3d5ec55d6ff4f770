package examples

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
)

const (
	// DemoWASMFile is the path, below "demo", of the demo's WASM module,
	// built from examples/controllers/flagfile. It is not in Git: [Demo]
	// holds it only when `make build` put it there before building.
	DemoWASMFile = ".cup/flagfile.wasm"
	// DemoWASMConfig is the path, below "demo", of the configuration of
	// the type the module serves (Segment): its controller, definition and
	// binding. A demo without the module is served without this file.
	DemoWASMConfig = ".cup/segments.yaml"
	// DemoBundleWASMFile is the path, below "demo", of the module of the
	// demo's reconciler, built from examples/reconcilers/flagbundle; not
	// in Git either.
	DemoBundleWASMFile = ".cup/flagbundle.wasm"
	// DemoBundleConfig is the path, below "demo", of the configuration of
	// the reconciler and its types (Bundle, FlagBundle). A demo without
	// either module is served without this file.
	DemoBundleConfig = ".cup/bundles.yaml"
)

// ErrNoDemoSource means the demo's WASM module is not embedded and its
// source (a checkout of github.com/cup-dev/cup) or the go command that
// builds it is not at hand.
var ErrNoDemoSource = errors.New("the demo's WASM module is not embedded, and its source or the go command is missing")

// module is the import path of the module whose checkout holds the source.
const module = "github.com/cup-dev/cup"

// wasmModule is a WASM module that DemoWASM or FlagBundleWASM builds from
// its source in a checkout of the repository.
type wasmModule struct {
	// what names the module in errors: "the demo's WASM module".
	what string
	// dirs are the folders, relative to the module root, whose files the
	// module is built from: the Go module of its main package first, then
	// the SDK it replaces its dependency with.
	dirs []string
	// cacheDir is the folder below os.UserCacheDir()/cup that keeps the
	// built modules, by source hash.
	cacheDir string
	// noSource is what the errors wrap when the source or the go command
	// is missing.
	noSource error

	// built holds the module built by this process, by source hash, so
	// that callers after the first (a test binary's many fixtures) neither
	// hash the cache file's path again nor build twice at once.
	built struct {
		sync.Mutex
		hash string
		b    []byte
	}
}

// demoModule is the demo's WASM module: the example controller.
var demoModule = &wasmModule{
	what:     "the demo's WASM module",
	dirs:     []string{"examples/controllers/flagfile", "sdk/go"},
	cacheDir: "demo-wasm",
	noSource: ErrNoDemoSource,
}

// flagBundleModule is the example reconciler's WASM module.
var flagBundleModule = &wasmModule{
	what:     "the flagbundle example's WASM module",
	dirs:     []string{"examples/reconcilers/flagbundle", "sdk/go"},
	cacheDir: "flagbundle-wasm",
	noSource: errors.New("the source of the flagbundle example's WASM module or the go command is missing"),
}

// DemoWASM returns the demo's WASM module, to be served as [DemoWASMFile]:
// the embedded one when there is one, else one built from its source in a
// checkout of the repository. A built module is kept in the user's cache
// folder (os.UserCacheDir()/cup/demo-wasm/<hash of the source>.wasm), so
// only the first call after the source changes runs the go command
// (GOOS=wasip1 GOARCH=wasm go build -trimpath -ldflags='-s -w'), which
// takes seconds. The source is found from this file's path at build time
// or, failing that, by walking up from the working directory to the
// go.mod of github.com/cup-dev/cup. Without it or a go command the error
// wraps [ErrNoDemoSource]. DemoWASM is safe for concurrent use, by
// goroutines and by processes sharing the cache.
func DemoWASM(ctx context.Context) ([]byte, error) {
	if b, err := fs.ReadFile(Demo, "demo/"+DemoWASMFile); err == nil {
		return b, nil
	}
	return demoModule.get(ctx)
}

// FlagBundleWASM returns the WASM module of the example reconciler in
// examples/reconcilers/flagbundle, built from its source as [DemoWASM]
// builds the demo's and kept in os.UserCacheDir()/cup/flagbundle-wasm/.
// Nothing embeds it: without a checkout of the repository or a go command
// it returns an error. It is safe for concurrent use, by goroutines and by
// processes sharing the cache.
func FlagBundleWASM(ctx context.Context) ([]byte, error) {
	if b, err := fs.ReadFile(Demo, "demo/"+DemoBundleWASMFile); err == nil {
		return b, nil
	}
	return flagBundleModule.get(ctx)
}

// get returns m built from its source: by this process before, from the
// cache folder, or by the go command now.
func (m *wasmModule) get(ctx context.Context) ([]byte, error) {
	root, err := m.sourceRoot()
	if err != nil {
		return nil, err
	}
	hash, err := m.sourceHash(root)
	if err != nil {
		return nil, fmt.Errorf("reading the source of %s: %w", m.what, err)
	}
	m.built.Lock()
	defer m.built.Unlock()
	if m.built.hash == hash {
		return m.built.b, nil
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	dir = filepath.Join(dir, "cup", m.cacheDir)
	out := filepath.Join(dir, hash+".wasm")
	b, err := os.ReadFile(out)
	if err != nil {
		if b, err = m.build(ctx, filepath.Join(root, filepath.FromSlash(m.dirs[0])), dir, out); err != nil {
			return nil, err
		}
	}
	m.built.hash, m.built.b = hash, b
	return b, nil
}

// build runs the go command in src to build the module into out, by way
// of a temporary file in dir so that no reader sees half a module.
func (m *wasmModule) build(ctx context.Context, src, dir, out string) ([]byte, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", m.noSource, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("building %s: %w", m.what, err)
	}
	f, err := os.CreateTemp(dir, "build-*.wasm")
	if err != nil {
		return nil, fmt.Errorf("building %s: %w", m.what, err)
	}
	tmp := f.Name()
	_ = f.Close()
	defer os.Remove(tmp)
	cmd := exec.CommandContext(ctx, goTool, "build", "-trimpath", "-ldflags=-s -w", "-o", tmp, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "GOWORK=off", "GOFLAGS=", "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building %s in %s: %w\n%s", m.what, src, err, bytes.TrimSpace(msg))
	}
	b, err := os.ReadFile(tmp)
	if err != nil {
		return nil, fmt.Errorf("building %s: %w", m.what, err)
	}
	if err := os.Rename(tmp, out); err != nil {
		return nil, fmt.Errorf("caching %s: %w", m.what, err)
	}
	return b, nil
}

// sourceRoot returns the root of a checkout of the repository that holds
// the module's source: the one this package was built from, or else the
// nearest above the working directory.
func (m *wasmModule) sourceRoot() (string, error) {
	var tried []string
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		root := filepath.Dir(filepath.Dir(file))
		if m.isRoot(root) {
			return root, nil
		}
		tried = append(tried, root)
	}
	if wd, err := os.Getwd(); err == nil {
		for dir := wd; ; {
			if m.isRoot(dir) {
				return dir, nil
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
		tried = append(tried, wd+" and above")
	}
	return "", fmt.Errorf("%w: no checkout of %s holding %s (looked in %s)", m.noSource, module, m.dirs[0], strings.Join(tried, ", "))
}

// isRoot reports whether dir is the root of a checkout of the repository
// holding the module's source.
func (m *wasmModule) isRoot(dir string) bool {
	f, err := os.Open(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) == 2 && fields[0] == "module" {
			if strings.Trim(fields[1], `"`) != module {
				return false
			}
			_, err := os.Stat(filepath.Join(dir, filepath.FromSlash(m.dirs[0]), "go.mod"))
			return err == nil
		}
	}
	return false
}

// sourceHash hashes what the module is built from: the Go files (tests
// left out), go.mod and go.sum of each of m.dirs, with their paths, and
// the Go version.
func (m *wasmModule) sourceHash(root string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s %s\n", runtime.Version(), "-trimpath -ldflags=-s -w")
	for _, d := range m.dirs {
		var files []string
		err := filepath.WalkDir(filepath.Join(root, filepath.FromSlash(d)), func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			name := e.Name()
			if e.IsDir() {
				if name == "testdata" || strings.HasPrefix(name, ".") || name == "node_modules" {
					return filepath.SkipDir
				}
				return nil
			}
			if name == "go.mod" || name == "go.sum" || strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			return "", err
		}
		slices.Sort(files)
		for _, p := range files {
			b, err := os.ReadFile(p)
			if err != nil {
				return "", err
			}
			rel, _ := filepath.Rel(root, p)
			fmt.Fprintf(h, "%s %d\n", filepath.ToSlash(rel), len(b))
			h.Write(b)
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:32], nil
}
