package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cup-dev/cup/examples"
	"github.com/cup-dev/cup/internal/gitrepo"
	"github.com/cup-dev/cup/internal/gittest"
)

// The demo's types the attacks use.
const (
	flagsPath    = "/apis/flags.cup.dev/v1alpha1/namespaces/default/flags/"
	segmentsPath = "/apis/flags.cup.dev/v1alpha1/namespaces/%s/segments"
)

// attacks are every attack, in the order they run.
var attacks = []*attack{
	{name: "nesting", run: nesting},
	{name: "cachekeys", run: cacheKeys},
	{name: "wasmfanout", run: wasmFanout},
	{name: "slowloris-idle", run: idleConnections},
	{name: "slowloris-trickle", args: []string{"--request-timeout", "5s"}, run: trickle},
	{name: "slowloris-hooks", remote: true, run: slowHooks},
	{name: "bigbody", run: bigBody},
	{name: "bigbody-connect", run: bigBodyConnect},
}

// nesting PUTs specs holding arrays nested deep: 10,000 levels as a black-box
// tester sent them (20 KB), 20 such branches (400 KB), and the same with
// 4,900 levels, which the JSON decoder's recursion limit (10,000, two per
// array) lets through; each with and without dryRun, 8 at once.
func nesting(ctx context.Context, e *env) {
	type variant struct{ branches, depth int }
	variants := []variant{{1, 10_000}, {20, 10_000}, {1, 4_900}, {20, 4_900}}
	bodies := make([][]byte, len(variants))
	for i, v := range variants {
		var b bytes.Buffer
		b.WriteString(`{"apiVersion":"flags.cup.dev/v1alpha1","kind":"Flag","spec":{"enabled":true`)
		for j := range v.branches {
			fmt.Fprintf(&b, `,"b%d":%s%s`, j, strings.Repeat("[", v.depth), strings.Repeat("]", v.depth))
		}
		b.WriteString("}}")
		bodies[i] = b.Bytes()
	}
	hc := client(8, 30*time.Second)
	defer hc.CloseIdleConnections()
	work(ctx, e.n(200, 4), 8, func(i int) {
		v, dry := variants[i%len(variants)], i/len(variants)%2 == 0
		url := fmt.Sprintf("%s%snest-%d", e.url, flagsPath, i)
		name := fmt.Sprintf("%d×%d deep (%s)", v.branches, v.depth, size(len(bodies[i%len(variants)])))
		if dry {
			url += "?dryRun=true"
			name += " dryRun"
		}
		e.send(ctx, hc, name, http.MethodPut, url, "application/json", bodies[i%len(variants)])
	})
}

// cacheKeys GETs new names, each with a query of 1 MB, 8 at once.
func cacheKeys(ctx context.Context, e *env) {
	const padBytes = 1_000_000
	pad := strings.Repeat("p", padBytes)
	hc := client(8, 30*time.Second)
	defer hc.CloseIdleConnections()
	work(ctx, e.n(3000, 10), 8, func(i int) {
		e.send(ctx, hc, "", http.MethodGet, fmt.Sprintf("%s%sck-%d?pad=%s", e.url, flagsPath, i, pad), "", nil)
	})
	e.tally.note("each request line %s (?pad=), each name new", size(padBytes+len(flagsPath)+20))
}

// wasmFanout gets and lists distinct namespaces of the type the WASM
// controller serves, all at once, in two rounds.
func wasmFanout(ctx context.Context, e *env) {
	n := e.n(450, 10)
	hc := client(n, 30*time.Second)
	defer hc.CloseIdleConnections()
	for round := range 2 {
		work(ctx, n, n, func(i int) {
			ns := fmt.Sprintf("fan-%d-%d", round, i)
			if i%2 == 0 {
				e.send(ctx, hc, "list", http.MethodGet, e.url+fmt.Sprintf(segmentsPath, ns), "", nil)
			} else {
				e.send(ctx, hc, "get", http.MethodGet, e.url+fmt.Sprintf(segmentsPath, ns)+"/s", "", nil)
			}
		})
	}
	e.tally.note("2 rounds of %d requests at once, each a namespace of its own", n)
}

// idleConnections opens keep-alive connections, each after one GET
// /healthz, and holds them idle, as many as the limit on open files
// allows less a margin.
func idleConnections(ctx context.Context, e *env) {
	const margin = 512
	n := e.n(20_000, 200)
	if limit := int(e.files) - margin; n > limit {
		n = max(limit, 1)
	}
	hold := e.d(10*time.Second, time.Second)
	var mu sync.Mutex
	var conns []*net.TCPConn
	defer func() {
		for _, c := range conns {
			_ = c.SetLinger(0) // no TIME_WAIT left behind
			_ = c.Close()
		}
	}()
	t0 := time.Now()
	d := net.Dialer{Timeout: 5 * time.Second}
	work(ctx, n, 32, func(int) {
		e.tally.sent.Add(1)
		c, err := d.DialContext(ctx, "tcp", e.addr)
		if err != nil {
			e.tally.add("", errorOutcome(err))
			return
		}
		tc := c.(*net.TCPConn)
		_ = tc.SetDeadline(time.Now().Add(10 * time.Second))
		res, err := roundTrip(tc, "GET /healthz HTTP/1.1\r\nHost: "+e.addr+"\r\n\r\n")
		if err != nil {
			_ = tc.SetLinger(0)
			_ = tc.Close()
			e.tally.add("", errorOutcome(err))
			return
		}
		_ = tc.SetDeadline(time.Time{})
		e.tally.add("", res)
		mu.Lock()
		conns = append(conns, tc)
		mu.Unlock()
	})
	opened := time.Since(t0)
	select {
	case <-ctx.Done():
	case <-time.After(hold):
	}
	open := 0
	for _, c := range conns {
		if stillOpen(c) {
			open++
		}
	}
	e.tally.note("opened %d of %d connections in %v (open files limit %d, less %d), held them %v: %d still open, %d closed by cupd",
		len(conns), n, opened.Round(100*time.Millisecond), e.files, margin, hold, open, len(conns)-open)
}

// roundTrip writes req on c and reads the answer's status, draining its
// body.
func roundTrip(c net.Conn, req string) (string, error) {
	if _, err := io.WriteString(c, req); err != nil {
		return "", err
	}
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return "", err
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return fmt.Sprint(res.StatusCode), nil
}

// stillOpen reports whether the peer has not closed c, without waiting.
func stillOpen(c *net.TCPConn) bool {
	rc, err := c.SyscallConn()
	if err != nil {
		return false
	}
	open := false
	_ = rc.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		open = n > 0 || errors.Is(err, syscall.EAGAIN)
		return true
	})
	return open
}

// trickle sends PUT bodies one byte every 2 seconds to a cupd with
// --request-timeout 5s, and measures how long each connection stays open.
func trickle(ctx context.Context, e *env) {
	n := e.n(50, 5)
	body := []byte(`{"spec":{"enabled":true}}` + strings.Repeat(" ", 200))
	var mu sync.Mutex
	var open []time.Duration
	atBound := 0
	work(ctx, n, n, func(i int) {
		head := fmt.Sprintf("PUT %strickle-%d?dryRun=true HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n",
			flagsPath, i, e.addr, len(body))
		res, took := slowRequest(ctx, e, head, body, 1, 2*time.Second, e.o.trickleBound)
		e.tally.add("", res)
		mu.Lock()
		defer mu.Unlock()
		if res == "open at bound" {
			atBound++
		} else {
			open = append(open, took)
		}
	})
	slices.Sort(open)
	s := fmt.Sprintf("%d bodies of %d bytes, 1 byte every 2s, cupd --request-timeout 5s; waited up to %v: %d still open then",
		n, len(body), e.o.trickleBound, atBound)
	if len(open) > 0 {
		s += fmt.Sprintf("; the others open for min %v, median %v, max %v",
			roundDuration(open[0]), roundDuration(open[len(open)/2]), roundDuration(open[len(open)-1]))
	}
	e.tally.note("%s", s)
}

// slowHooks sends 4 MB bodies to POST /hooks/fetch, 64 KB at a time, all
// at once, to a cupd serving a remote repository.
func slowHooks(ctx context.Context, e *env) {
	const chunk = 64 << 10
	n := e.n(400, 10)
	body := bytes.Repeat([]byte(" "), 4<<20-1024)
	body[0], body[len(body)-1] = '{', '}'
	send := e.d(10*time.Second, time.Second)
	interval := send / time.Duration(len(body)/chunk)
	var mu sync.Mutex
	var took []time.Duration
	work(ctx, n, n, func(int) {
		head := fmt.Sprintf("POST /hooks/fetch HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", e.addr, len(body))
		res, d := slowRequest(ctx, e, head, body, chunk, interval, send+30*time.Second)
		e.tally.add("", res)
		mu.Lock()
		took = append(took, d)
		mu.Unlock()
	})
	slices.Sort(took)
	s := fmt.Sprintf("%d requests at once, each %s sent %s every %v (over %v)", n, size(len(body)), size(chunk), interval.Round(time.Millisecond), send)
	if len(took) > 0 {
		s += fmt.Sprintf("; answered or closed after median %v, max %v", roundDuration(took[len(took)/2]), roundDuration(took[len(took)-1]))
	}
	e.tally.note("%s", s)
}

// slowRequest sends head at once, then body chunk bytes every interval,
// while reading cupd's answer; it gives up after bound. It returns the
// outcome (the answer's status, "closed", or "open at bound") and how long
// the connection was open.
func slowRequest(ctx context.Context, e *env, head string, body []byte, chunk int, interval, bound time.Duration) (string, time.Duration) {
	t0 := time.Now()
	e.tally.sent.Add(1)
	d := net.Dialer{Timeout: 5 * time.Second}
	c, err := d.DialContext(ctx, "tcp", e.addr)
	if err != nil {
		return errorOutcome(err), time.Since(t0)
	}
	tc := c.(*net.TCPConn)
	defer func() { _ = tc.SetLinger(0); _ = tc.Close() }()
	answer := make(chan string, 1)
	go func() {
		res, err := http.ReadResponse(bufio.NewReader(tc), nil)
		if err != nil {
			answer <- errorOutcome(err)
			return
		}
		res.Body.Close()
		answer <- fmt.Sprint(res.StatusCode)
	}()
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	if _, err := io.WriteString(tc, head); err != nil {
		return waitAnswer(answer, err), time.Since(t0)
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for sent := 0; ; {
		if sent < len(body) {
			m := min(chunk, len(body)-sent)
			if _, err := tc.Write(body[sent : sent+m]); err != nil {
				return waitAnswer(answer, err), time.Since(t0)
			}
			sent += m
		}
		select {
		case a := <-answer:
			return a, time.Since(t0)
		case <-ctx.Done():
			return "cancelled", time.Since(t0)
		case <-deadline.C:
			return "open at bound", time.Since(t0)
		case <-tick.C:
		}
	}
}

// waitAnswer returns the answer cupd sent before a write failed with err,
// or what err says.
func waitAnswer(answer <-chan string, err error) string {
	select {
	case a := <-answer:
		return a
	case <-time.After(time.Second):
		return errorOutcome(err)
	}
}

// bigBody PUTs (dry run) a spec just under cupd's --max-request-bytes:
// flat and wide, with many keys; 8 at once.
func bigBody(ctx context.Context, e *env) {
	body, keys := wideSpec(e, `{"apiVersion":"flags.cup.dev/v1alpha1","kind":"Flag","spec":{"enabled":true`, "}}")
	hc := client(8, 30*time.Second)
	defer hc.CloseIdleConnections()
	work(ctx, e.n(64, 2), 8, func(i int) {
		e.send(ctx, hc, "", http.MethodPut, fmt.Sprintf("%s%sbig-%d?dryRun=true", e.url, flagsPath, i), "application/json", body)
	})
	e.tally.note("each body %s: a spec of %d keys (--max-request-bytes %d)", size(len(body)), keys, e.maxBody)
}

// bigBodyConnect is bigBody over Connect's JSON form, where the spec
// arrives as a protobuf Struct.
func bigBodyConnect(ctx context.Context, e *env) {
	body, keys := wideSpec(e, `{"group":"flags.cup.dev","version":"v1alpha1","plural":"flags","namespace":"default","name":"big","dryRun":true,"resource":{"spec":{"enabled":true`, "}}}")
	hc := client(8, 30*time.Second)
	defer hc.CloseIdleConnections()
	work(ctx, e.n(64, 2), 8, func(int) {
		e.send(ctx, hc, "", http.MethodPost, e.url+"/cup.v1alpha1.ResourceService/Put", "application/json", body)
	})
	e.tally.note("each body %s: a spec of %d keys (--max-request-bytes %d)", size(len(body)), keys, e.maxBody)
}

// wideSpec is prefix, then as many short keys as fit in the request
// limit, then suffix.
func wideSpec(e *env, prefix, suffix string) (body []byte, keys int) {
	var b bytes.Buffer
	b.WriteString(prefix)
	for limit := int(e.maxBody) - 4096; b.Len() < limit-20; keys++ {
		fmt.Fprintf(&b, `,"k%07d":"v"`, keys)
	}
	b.WriteString(suffix)
	return b.Bytes(), keys
}

// startRemote serves the demo repository over smart HTTP on 127.0.0.1 from
// dir, and returns its URL and how to stop the server.
func startRemote(dir string) (string, func(), error) {
	srv, err := gittest.Start(gittest.WithRoot(dir))
	if err != nil {
		return "", nil, err
	}
	files, err := examples.DemoFiles()
	if err == nil {
		files[examples.DemoWASMFile], err = examples.DemoWASM(context.Background())
	}
	if err == nil {
		files[examples.DemoBundleWASMFile], err = examples.FlagBundleWASM(context.Background())
	}
	if err == nil {
		_, err = gitrepo.Init(srv.Path(gittest.Demo), "main", files, "demo\n")
	}
	if err != nil {
		srv.Close()
		return "", nil, err
	}
	return srv.URL(gittest.Demo), srv.Close, nil
}

// size formats n bytes as B, KiB or MiB.
func size(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.0f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
