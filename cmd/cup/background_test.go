package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is an output that a test reads while cup writes it.
type syncBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{} // closed at the next write
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{changed: make(chan struct{})} }

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.buf.Write(p)
	close(b.changed)
	b.changed = make(chan struct{})
	return n, err
}

// snapshot is what was written so far, and a channel closed at the next
// write.
func (b *syncBuffer) snapshot() (string, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String(), b.changed
}

// background is a cup command running until its context is cancelled,
// as a watch does.
type background struct {
	args           []string
	stdout, stderr *syncBuffer
	cancel         context.CancelFunc
	finished       chan struct{}
	code           int
}

// startCup runs the command line against url in the background.
func startCup(t *testing.T, url string, args ...string) *background {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	b := &background{args: args, stdout: newSyncBuffer(), stderr: newSyncBuffer(), cancel: cancel, finished: make(chan struct{})}
	go func() {
		defer close(b.finished)
		b.code = run(ctx, append([]string{"--server", url}, args...), strings.NewReader(""), b.stdout, b.stderr)
	}()
	t.Cleanup(func() { cancel(); <-b.finished })
	return b
}

// waitFor waits until done(stdout) holds, and returns stdout. It fails the
// test when the command ends first, or after 10 seconds.
func (b *background) waitFor(t *testing.T, what string, done func(stdout string) bool) string {
	t.Helper()
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for {
		out, changed := b.stdout.snapshot()
		if done(out) {
			return out
		}
		select {
		case <-changed:
		case <-b.finished:
			out, _ := b.stdout.snapshot()
			if done(out) {
				return out
			}
			errOut, _ := b.stderr.snapshot()
			t.Fatalf("cup %s ended (exit %d) before %s\nstdout:\n%s\nstderr: %s", strings.Join(b.args, " "), b.code, what, out, errOut)
		case <-timeout.C:
			errOut, _ := b.stderr.snapshot()
			t.Fatalf("cup %s: no %s within 10 seconds\nstdout:\n%s\nstderr: %s", strings.Join(b.args, " "), what, out, errOut)
		}
	}
}

// stop interrupts the command and returns what it printed and its exit code.
func (b *background) stop() result {
	b.cancel()
	<-b.finished
	out, _ := b.stdout.snapshot()
	errOut, _ := b.stderr.snapshot()
	return result{stdout: out, stderr: errOut, code: b.code}
}

// wait waits for the command to end by itself.
func (b *background) wait(t *testing.T) result {
	t.Helper()
	select {
	case <-b.finished:
	case <-time.After(10 * time.Second):
		t.Fatalf("cup %s did not end within 10 seconds", strings.Join(b.args, " "))
	}
	return b.stop()
}

// headCommit is the commit the server's branch is at.
func headCommit(t *testing.T, url string) string {
	t.Helper()
	var h struct{ Commit string }
	if err := json.Unmarshal([]byte(ok(t, url, "history", "flags", "dark-mode", "-o", "json")), &h); err != nil || len(h.Commit) != 40 {
		t.Fatalf("history -o json: commit %q, %v", h.Commit, err)
	}
	return h.Commit
}
