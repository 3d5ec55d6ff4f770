package server_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cup-dev/cup/internal/benchrepo"
)

// longHistory is a repository of benchrepo's items whose branch main has
// commits commits, each changing one item of 100 in the flat layout; the
// item "item-000000" changes in every (commits/touching)-th commit. It is
// written once per test binary with git fast-import.
var longHistory = sync.OnceValues(func() (string, error) {
	const commits, touching = 10_000, 50
	return benchHistory("cup-history-bench-", 100, commits, func(i int) int {
		if i%(commits/touching) == 0 {
			return 0
		}
		return 1 + i%99
	})
})

// benchHistory writes benchrepo's n items into a new directory named
// with prefix, then commits commits on main, the i-th changing item
// item(i), with git fast-import, and returns the directory.
func benchHistory(prefix string, n, commits int, item func(i int) int) (string, error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", err
	}
	if _, err := benchrepo.Generate(dir, n, benchrepo.Flat); err != nil {
		return "", err
	}
	repo := filepath.Join(dir, "repo.git")
	head, err := exec.Command("git", "--git-dir", repo, "rev-parse", "main").Output()
	if err != nil {
		return "", err
	}
	var in bytes.Buffer
	for i := range commits {
		item := item(i)
		data := benchrepo.Item(item, fmt.Sprintf("change %d", i))
		msg := fmt.Sprintf("change %d of %s", i, benchrepo.Name(item))
		fmt.Fprintf(&in, "commit refs/heads/main\ncommitter bench <bench@example.com> %d +0000\ndata %d\n%s\n", 1700000000+i, len(msg), msg)
		if i == 0 {
			fmt.Fprintf(&in, "from %s\n", bytes.TrimSpace(head))
		}
		fmt.Fprintf(&in, "M 100644 inline items/default/%s.json\ndata %d\n%s\n", benchrepo.Name(item), len(data), data)
	}
	cmd := exec.Command("git", "fast-import", "--quiet")
	cmd.Dir, cmd.Stdin = repo, &in
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("git fast-import: %v: %s", err, out)
	}
	return dir, nil
}

// historyServer serves the long history from disk, with caches as cold as a
// new cupd's.
func historyServer(b *testing.B) (http.Handler, func()) {
	dir, err := longHistory()
	if err != nil {
		b.Fatal(err)
	}
	a := openBench(b, dir)
	return a.Handler(), func() { _ = a.Close() }
}

const historyOfItem0 = "/apis/bench.cup.dev/v1/namespaces/default/items/item-000000/history?limit=20"

func getHistory(b *testing.B, h http.Handler) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", historyOfItem0, nil))
	if rec.Code != 200 || strings.Count(rec.Body.String(), `"subject":`) != 20 {
		b.Fatalf("history: %d %.300s", rec.Code, rec.Body)
	}
}

// BenchmarkHistory measures a page of 20 of one resource's history over
// 10,000 commits of which 50 change it, in a flat directory of 100
// resources: cold (a new server over the repository on disk: every commit
// and tree read for the first time) and warm (the same page again).
func BenchmarkHistory(b *testing.B) {
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			h, closer := historyServer(b)
			b.StartTimer()
			getHistory(b, h)
			b.StopTimer()
			closer()
			b.StartTimer()
		}
	})
	b.Run("warm", func(b *testing.B) {
		h, closer := historyServer(b)
		defer closer()
		getHistory(b, h)
		for b.Loop() {
			getHistory(b, h)
		}
	})
}
