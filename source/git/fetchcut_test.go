package git_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cup-dev/cup/internal/gitrepo"
	"github.com/cup-dev/cup/internal/gittest"
	"github.com/cup-dev/cup/source"
	"github.com/cup-dev/cup/source/git"
)

// cutProxy serves a repository of a gittest server through a reverse
// proxy that, while cut is positive, passes on only the first cut bytes of
// each fetch's pack (a git-upload-pack POST's answer) and then breaks the
// connection: a network failure in the middle of a download.
type cutProxy struct {
	srv *httptest.Server
	cut atomic.Int64
}

func newCutProxy(t *testing.T, upstream string) *cutProxy {
	t.Helper()
	target, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ErrorLog = nil
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := p.cut.Load()
		if n <= 0 || r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, gittest.UploadPack) {
			rp.ServeHTTP(w, r)
			return
		}
		rp.ServeHTTP(&cutWriter{ResponseWriter: w, left: n}, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// cutWriter passes on left bytes, then aborts the request, which closes
// the connection.
type cutWriter struct {
	http.ResponseWriter
	left int64
}

func (w *cutWriter) Write(b []byte) (int, error) {
	if int64(len(b)) >= w.left {
		w.ResponseWriter.Write(b[:w.left])
		http.NewResponseController(w.ResponseWriter).Flush()
		panic(http.ErrAbortHandler)
	}
	w.left -= int64(len(b))
	return w.ResponseWriter.Write(b)
}

func (w *cutWriter) Flush() { http.NewResponseController(w.ResponseWriter).Flush() }

// TestFetchCutMidPack breaks the connection at many points of a fetch's
// download of someone else's commit: the fetch fails, and the next one,
// with the network whole, brings the whole commit, whose files can be
// read and written on, in memory and with a cache directory (also after a
// restart on it).
func TestFetchCutMidPack(t *testing.T) {
	t.Parallel()
	for _, cached := range []bool{false, true} {
		t.Run(fmt.Sprintf("cache=%t", cached), func(t *testing.T) {
			t.Parallel()
			r := newRemote(t)
			proxy := newCutProxy(t, r.srv.URL(""))
			var opts []git.Option
			cache := ""
			if cached {
				cache = t.TempDir()
				opts = append(opts, git.WithCacheDir(cache))
			}
			src, err := git.Open(proxy.srv.URL+"/"+repoName, append([]git.Option{
				git.WithAuth(git.BasicAuth(user, password)),
				git.WithLogger(testLogger(t)),
				git.WithFetchInterval(-1),
			}, opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { src.Close() })
			if err := src.Start(t.Context()); err != nil {
				t.Fatal(err)
			}
			cuts := 0
			for n := int64(64); n <= 1600; n += 48 {
				name := fmt.Sprint(n)
				// A commit with a new file in a new directory, and a
				// change to an old one: a commit, trees and blobs.
				content := strings.Repeat(name+" is a line of content that takes some room\n", 8)
				if _, err := gitrepo.Commit(r.dir, "main", map[string][]byte{
					"deep/dir/" + name + "/file.yaml": []byte(content),
					"config/a.yaml":                   []byte("a: " + name + "\n"),
				}, "elsewhere "+name+"\n"); err != nil {
					t.Fatal(err)
				}
				head := r.branchHead(t, "main")
				proxy.cut.Store(n)
				err := src.Fetch(t.Context())
				proxy.cut.Store(0)
				switch {
				case err == nil:
					// The pack was smaller than the cut.
				case errors.Is(err, source.ErrUnavailable):
					cuts++
				default:
					t.Fatalf("cut at %d: Fetch: %v, want ErrUnavailable", n, err)
				}
				if err := src.Fetch(t.Context()); err != nil {
					t.Fatalf("cut at %d: Fetch on a whole network: %v", n, err)
				}
				snap, err := src.View(t.Context(), "")
				if err != nil || snap.Commit != head {
					t.Fatalf("cut at %d: View = %v, %v; want %s", n, snap, err, head)
				}
				if got := readFile(t, src, "", "deep/dir/"+name+"/file.yaml"); got != content {
					t.Fatalf("cut at %d: read %q", n, got)
				}
				if _, err := src.Update(t.Context(), &source.UpdateRequest{Message: "x\n", IdempotencyKey: "cut-" + name, Fingerprint: "fp",
					Apply: write("deep/dir/"+name+"/mine.yaml", "mine\n")}); err != nil {
					t.Fatalf("cut at %d: Update: %v", n, err)
				}
			}
			if cuts == 0 {
				t.Fatal("no fetch was cut")
			}
			t.Logf("%d fetches cut", cuts)
			if cached {
				head := r.branchHead(t, "main")
				src.Close()
				fsck(t, cache)
				offline := r.open(t, git.WithCacheDir(cache))
				r.srv.SetFault(gittest.FaultRefuse)
				if err := offline.Start(t.Context()); err != nil {
					t.Fatal(err)
				}
				if snap, err := offline.View(t.Context(), ""); err != nil || snap.Commit != head {
					t.Errorf("View of the cache alone = %v, %v; want %s", snap, err, head)
				}
			}
		})
	}
}
