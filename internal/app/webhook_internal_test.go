package app

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
)

// These tests are white-box: webhook and coalesced are wired by Open only
// for remote repositories; cmd/cupd's tests call them end to end.

func TestCoalescedCallsShareRuns(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var runs atomic.Int32
		release := make(chan struct{})
		c := &coalesced{do: func(ctx context.Context) error {
			runs.Add(1)
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}}
		var wg sync.WaitGroup
		wg.Go(func() { _ = c.call(t.Context()) })
		synctest.Wait() // the first run is in progress
		for range 10 {
			wg.Go(func() { _ = c.call(t.Context()) })
		}
		synctest.Wait()
		if n := runs.Load(); n != 1 {
			t.Fatalf("%d runs while the first one is in progress, want 1", n)
		}
		release <- struct{}{} // the first run ends; the ten share the second
		synctest.Wait()
		if n := runs.Load(); n != 2 {
			t.Fatalf("%d runs after the first ended, want 2: the ten calls that came during it share one", n)
		}
		release <- struct{}{}
		wg.Wait()
		if n := runs.Load(); n != 2 {
			t.Fatalf("%d runs in all, want 2", n)
		}
	})
}

func TestCoalescedRunEndedByItsCallerDoesNotCount(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var runs atomic.Int32
		release := make(chan struct{})
		c := &coalesced{do: func(ctx context.Context) error {
			runs.Add(1)
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}}
		leader, leave := context.WithCancel(t.Context())
		done := make(chan error, 2)
		go func() { done <- c.call(leader) }()
		synctest.Wait()
		go func() { done <- c.call(t.Context()) }()
		synctest.Wait()
		leave()
		if err := <-done; err == nil {
			t.Fatal("the call whose caller left succeeded")
		}
		synctest.Wait() // the waiting call runs again, under its own context
		release <- struct{}{}
		if err := <-done; err != nil {
			t.Fatalf("the waiting call failed with its leader's cancellation: %v", err)
		}
		if n := runs.Load(); n != 2 {
			t.Fatalf("%d runs, want 2", n)
		}
	})
}

func TestWebhookCallsBeyondTheLimitAreRefused(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		slots := make(chan struct{}, 1)
		h := webhook("hook", slots, slog.New(slog.DiscardHandler), "fetch", false, func(context.Context, []byte) error { <-release; return nil })
		call := func() *httptest.ResponseRecorder {
			req := httptest.NewRequest(http.MethodPost, "/hooks/fetch", strings.NewReader("{}"))
			req.Header.Set("Authorization", "Bearer hook")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			return w
		}
		first := make(chan int)
		go func() { first <- call().Code }()
		synctest.Wait()
		if w := call(); w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" {
			t.Fatalf("a call past the limit = %d %s, want 429 with Retry-After", w.Code, w.Body)
		}
		close(release)
		if code := <-first; code != http.StatusNoContent {
			t.Fatalf("the call within the limit = %d", code)
		}
		if w := call(); w.Code != http.StatusNoContent {
			t.Fatalf("a call after the slot freed = %d %s", w.Code, w.Body)
		}
	})
}

// unreadable is a body that fails the test when read.
type unreadable struct{ t *testing.T }

func (u unreadable) Read([]byte) (int, error) {
	u.t.Error("the webhook read the body of a call it could refuse without it")
	return 0, io.ErrUnexpectedEOF
}

func TestWebhookChecksTokensBeforeReadingTheBody(t *testing.T) {
	t.Parallel()
	ran := false
	h := webhook("hook", make(chan struct{}, 1), slog.New(slog.DiscardHandler), "fetch", false, func(context.Context, []byte) error { ran = true; return nil })
	for _, tc := range []struct {
		name   string
		header [2]string
		want   int
	}{
		{"no secret", [2]string{}, http.StatusUnauthorized},
		{"wrong bearer", [2]string{"Authorization", "Bearer nope"}, http.StatusUnauthorized},
		{"wrong GitLab token", [2]string{"X-Gitlab-Token", "nope"}, http.StatusUnauthorized},
		{"bearer", [2]string{"Authorization", "Bearer hook"}, http.StatusNoContent},
		{"GitLab token", [2]string{"X-Gitlab-Token", "hook"}, http.StatusNoContent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ran = false
			req := httptest.NewRequest(http.MethodPost, "/hooks/fetch", unreadable{t})
			if tc.header[0] != "" {
				req.Header.Set(tc.header[0], tc.header[1])
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != tc.want || ran != (tc.want == http.StatusNoContent) {
				t.Fatalf("= %d %s (fetched: %v), want %d", w.Code, w.Body, ran, tc.want)
			}
		})
	}
}

func TestProposalOf(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, body, want string
	}{
		{"GitHub", `{"action":"closed","number":7,"pull_request":{"number":7,"merged":true}}`, "7"},
		{"Gitea", `{"action":"closed","number":12,"pull_request":{"id":99,"number":12,"merged":true}}`, "12"},
		{"GitLab", `{"object_kind":"merge_request","object_attributes":{"id":501,"iid":3}}`, "3"},
		{"GitLabNote", `{"object_kind":"note","object_attributes":{"iid":3}}`, ""},
		{"Push", `{"ref":"refs/heads/main"}`, ""},
		{"Empty", ``, ""},
		{"NotJSON", `payload=%7B%7D`, ""},
		{"NoNumber", `{"pull_request":{}}`, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := proposalOf([]byte(tt.body)); got != tt.want {
				t.Errorf("proposalOf(%s) = %q, want %q", tt.body, got, tt.want)
			}
		})
	}
}
