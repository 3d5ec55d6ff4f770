//go:build unix

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cup-dev/cup/internal/gitrepo"
	"github.com/cup-dev/cup/internal/gittest"
	"github.com/cup-dev/cup/internal/testlog"
)

// buildCupd builds this package's binary into a temporary directory.
func buildCupd(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("building cupd needs the go command: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "cupd")
	start := time.Now()
	if out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Logf("built cupd in %s", time.Since(start).Round(time.Millisecond))
	return bin
}

// process is cupd running as a child process.
type process struct {
	cmd            *exec.Cmd
	url            string
	stdout, stderr *testlog.Buffer
	done           chan struct{} // closed when it exited
}

// startProcess runs bin with args and returns once it serves.
func startProcess(t *testing.T, bin string, env []string, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(bin, withoutReconcilers(args)...), stdout: &testlog.Buffer{}, stderr: &testlog.Buffer{}, done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if m := addressLine.FindStringSubmatch(p.stdout.String()); m != nil {
			p.url = m[1]
			return p
		}
		select {
		case <-p.done:
			t.Fatalf("cupd exited: %v\nstdout: %s\nstderr: %s", p.cmd.ProcessState, p.stdout, p.stderr)
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("cupd printed no address\nstdout: %s\nstderr: %s", p.stdout, p.stderr)
	return nil
}

// kill sends SIGKILL and waits for the process to go.
func (p *process) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// stop asks cupd to shut down and fails the test unless it does cleanly.
func (p *process) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatal("cupd did not stop 30 s after SIGTERM")
	}
	if !p.cmd.ProcessState.Success() {
		t.Errorf("cupd exited with %v\nstderr: %s", p.cmd.ProcessState, p.stderr)
	}
}

// keyedWrite is one write of TestKilledWithWritesInFlight.
type keyedWrite struct {
	key, path, body string
}

func killWrite(i int) keyedWrite {
	name := fmt.Sprintf("kill-%02d", i)
	return keyedWrite{
		key:  "key-" + name,
		path: "/apis/flags.cup.dev/v1alpha1/namespaces/default/flags/" + name,
		body: fmt.Sprintf(`{"spec": {"description": "Written before the kill.", "enabled": true, "rollout": %d}}`, i),
	}
}

// answer is what a write answered: the status, whether it was a replay,
// and the commit.
type answer struct {
	status   int
	replayed bool
	commit   string
}

func (w keyedWrite) send(ctx context.Context, client *http.Client, url string) (answer, error) {
	req, err := http.NewRequestWithContext(ctx, "PUT", url+w.path, strings.NewReader(w.body))
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("Idempotency-Key", w.key)
	res, err := client.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return answer{}, err
	}
	a := answer{status: res.StatusCode, replayed: res.Header.Get("Idempotent-Replayed") == "true"}
	if a.status == http.StatusAccepted {
		var r writeResult
		if err := json.Unmarshal(body, &r); err != nil {
			return a, err
		}
		a.commit = r.Result.Commit
	} else {
		return a, fmt.Errorf("status %d: %s", res.StatusCode, body)
	}
	return a, nil
}

// keyedCommits counts the commits on the remote's main carrying each
// idempotency key, and returns the commit of each.
func keyedCommits(t *testing.T, dir string) (count map[string]int, commit map[string]string) {
	t.Helper()
	out, err := exec.Command("git", "--git-dir", dir, "log", "--format=%H %(trailers:key=Cup-Idempotency-Key,valueonly,separator=%x2C)", "main").CombinedOutput()
	if err != nil {
		t.Fatalf("git log: %v\n%s", err, out)
	}
	count, commit = map[string]int{}, map[string]string{}
	for line := range strings.Lines(string(out)) {
		id, keys, _ := strings.Cut(strings.TrimSpace(line), " ")
		for k := range strings.SplitSeq(keys, ",") {
			if k = strings.TrimSpace(k); k != "" {
				count[k]++
				commit[k] = id
			}
		}
	}
	return count, commit
}

// TestKilledWithWritesInFlight runs cupd as a process over a remote with
// a cache directory, sends it concurrent keyed writes, and kills it with
// SIGKILL while some are in flight, pushed but not answered: with 64
// writers at once, a group of them (group commit).
// Restarted on the same cache, it starts; every write acknowledged before
// the kill is on the remote once; repeating every write with its key
// replays it (the acknowledged ones and the one that landed unanswered)
// or applies it, so that each is on the remote exactly once; and git fsck
// finds nothing wrong with the remote or the cache.
func TestKilledWithWritesInFlight(t *testing.T) {
	if testing.Short() {
		t.Skip("slow (kills cupd mid-write and restarts it, for seconds): runs without -short")
	}
	bin := buildCupd(t)
	srv, dir, remote := serveDemo(t)
	cache := t.TempDir()
	env := []string{"CUPD_GIT_TOKEN=s3cret"}
	args := []string{"serve", "--address", "127.0.0.1:0", "--repository", remote, "--git-user", "alice",
		"--cache-dir", cache, "--write-mode", "direct", "--fetch-interval", "0", "--log-level", "debug"}
	began := time.Now()
	p := startProcess(t, bin, env, args...)
	t.Logf("cupd serves after %s", time.Since(began).Round(time.Millisecond))

	// The kill comes once the remote has taken the killAt-th push, whose
	// answer never reaches cupd, and before cupd finds out that it landed:
	// writes that are on the remote and that nobody was told about. The
	// other workers' writes are in flight around them.
	const writes, workers, killAt = 100, 64, 4 // rollout (i) is at most 100
	var (
		mu       sync.Mutex
		acked    = map[int]answer{} // answered before the kill
		inFlight = map[int]error{}  // sent, answer lost
		next     atomic.Int64
		pushes   atomic.Int64
		cut      atomic.Pointer[string] // main before the cut push
		killed   = make(chan struct{})
		killOnce sync.Once
		wg       sync.WaitGroup
	)
	kill := func() {
		killOnce.Do(func() {
			close(killed) // no more writes start
			p.kill()
			srv.SetFault(gittest.FaultNone)
		})
	}
	srv.OnRequest(func(r *http.Request) {
		if before := cut.Load(); before != nil {
			// Any request after the cut push: wait for that push to land
			// (a fetch of another write may come first), then kill.
			for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				if now, err := gitrepo.Resolve(dir, "main"); err == nil && now != *before {
					break
				}
			}
			kill()
			return
		}
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, gittest.ReceivePack) && pushes.Add(1) == killAt {
			before, err := gitrepo.Resolve(dir, "main")
			if err != nil {
				t.Error(err)
			}
			srv.SetFault(gittest.FaultCutAfterPush) // this request's
			cut.Store(&before)
		}
	})
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{DisableKeepAlives: true}}
	ctx := t.Context()
	for range workers {
		wg.Go(func() {
			for {
				select {
				case <-killed:
					return
				default:
				}
				i := int(next.Add(1)) - 1
				if i >= writes {
					return
				}
				a, err := killWrite(i).send(ctx, client, p.url)
				mu.Lock()
				if err == nil {
					acked[i] = a
				} else {
					inFlight[i] = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	srv.OnRequest(nil)
	if cut.Load() == nil {
		t.Fatalf("cupd made %d pushes, not %d: %d writes answered, %v", pushes.Load(), killAt, len(acked), inFlight)
	}
	t.Logf("%d writes answered before the kill, %d in flight, %d not sent", len(acked), len(inFlight), writes-len(acked)-len(inFlight))
	for i, err := range inFlight {
		t.Logf("in flight: %s: %v", killWrite(i).key, err)
	}

	count, commit := keyedCommits(t, dir)
	for i, a := range acked {
		w := killWrite(i)
		if a.replayed || count[w.key] != 1 || commit[w.key] != a.commit {
			t.Errorf("acknowledged write %s (%+v) is on the remote %d times, as %s", w.key, a, count[w.key], commit[w.key])
		}
	}
	// The writes whose push landed unacknowledged.
	landed := map[int]bool{}
	for i := range inFlight {
		if count[killWrite(i).key] > 0 {
			landed[i] = true
		}
	}
	if len(landed) == 0 || len(count) != len(acked)+len(landed) {
		t.Fatalf("%d keyed commits on the remote, want the %d acknowledged ones and at least one in flight (%d)", len(count), len(acked), len(landed))
	}
	t.Logf("%d writes landed unacknowledged in the cut push", len(landed))

	began = time.Now()
	p = startProcess(t, bin, env, args...)
	t.Logf("restarted cupd serves after %s", time.Since(began).Round(time.Millisecond))
	if code, body := get(t, p.url+"/readyz"); code != 200 {
		t.Fatalf("/readyz after the restart = %d %s", code, body)
	}
	for i := range writes {
		w := killWrite(i)
		a, err := w.send(ctx, client, p.url)
		if err != nil {
			t.Errorf("repeating %s after the restart: %v", w.key, err)
			continue
		}
		if first, ok := acked[i]; ok && (!a.replayed || a.commit != first.commit) {
			t.Errorf("repeating acknowledged write %s answered %+v, want a replay of %s", w.key, a, first.commit)
		}
		if landed[i] && (!a.replayed || a.commit != commit[w.key]) {
			t.Errorf("repeating write %s, which landed unacknowledged, answered %+v, want a replay of %s", w.key, a, commit[w.key])
		}
	}
	t.Logf("repeated every write in %s", time.Since(began).Round(time.Millisecond))
	count, commit = keyedCommits(t, dir)
	files, err := gitrepo.Files(dir, "main")
	if err != nil {
		t.Fatal(err)
	}
	for i := range writes {
		w := killWrite(i)
		if count[w.key] != 1 {
			t.Errorf("write %s is on the remote %d times, want once", w.key, count[w.key])
		}
		name := fmt.Sprintf("flags/default/kill-%02d.yaml", i)
		if !strings.Contains(string(files[name]), fmt.Sprintf("rollout: %d\n", i)) {
			t.Errorf("%s on the remote = %q", name, files[name])
		}
	}
	p.stop(t)
	fsck(t, dir)
	fsck(t, cache)
	if t.Failed() {
		t.Logf("cupd's log after the restart:\n%s", p.stderr)
	}
}

// fsck runs git fsck --strict on a repository and fails the test on any
// complaint. Dangling objects, which writes cut short leave behind, are
// not complaints.
func fsck(t *testing.T, dir string) {
	t.Helper()
	out, err := exec.Command("git", "--git-dir", dir, "fsck", "--strict", "--no-dangling").CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("git fsck --strict %s: %v\n%s", dir, err, out)
	}
}
