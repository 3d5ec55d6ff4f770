//go:build unix

package main

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestWatchEndToEnd watches the demo's flags over the REST form of a real
// cupd: the initial state, a write's event, the watch counted in the
// metrics; then SIGTERM ends the watch at once, and cupd exits cleanly well
// within its shutdown timeout instead of waiting for the watch.
func TestWatchEndToEnd(t *testing.T) {
	p := startProcess(t, buildCupd(t), nil, "serve", "--address", "127.0.0.1:0", "--shutdown-timeout", "20s")
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	res, err := c.Get(p.url + "/apis/flags.cup.dev/v1alpha1/namespaces/default/flags?watch=true")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	next := func(what string) string {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the watch ended while waiting for %s", what)
			}
			return l
		case <-time.After(30 * time.Second):
			t.Fatalf("no %s within 30 s", what)
			return ""
		}
	}
	for l := next("the initial state"); !strings.Contains(l, `"type":"BOOKMARK"`); l = next("the initial state") {
		if !strings.Contains(l, `"type":"ADDED"`) {
			t.Fatalf("initial state: %s", l)
		}
	}
	req, _ := http.NewRequest(http.MethodPut, p.url+"/apis/flags.cup.dev/v1alpha1/namespaces/default/flags/dark-mode",
		strings.NewReader(`{"spec": {"description": "Watched.", "enabled": false}}`))
	put, err := c.Do(req)
	if err != nil || put.StatusCode != http.StatusAccepted {
		t.Fatalf("PUT: %v %v", put, err)
	}
	put.Body.Close()
	if l := next("the put's event"); !strings.Contains(l, `"type":"MODIFIED"`) || !strings.Contains(l, `"name":"dark-mode"`) {
		t.Fatalf("after the put: %s", l)
	}
	open := false
	for _, s := range scrape(t, p.url) {
		if s.name == "cup_server_watches" && s.value == 1 {
			open = true
		}
	}
	if !open {
		t.Error("cup_server_watches is not 1 with one watch open")
	}
	http.DefaultClient.CloseIdleConnections() // scrape's
	start := time.Now()
	p.stop(t)
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("cupd took %s to stop with a watch open; its shutdown timeout is 20 s", took)
	}
	for range lines { // the stream ended
	}
}
