package cueeval

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"time"
)

// Bounds of the worker itself.
const (
	// maxProcs is the most threads of Go code a worker runs.
	maxProcs = 2
	// sampleEvery is how often the watchdog reads the heap's size.
	sampleEvery = 2 * time.Millisecond
	// fuseGrace is how long after the timeout a worker that was not killed
	// exits by itself.
	fuseGrace = 2 * time.Second
	// maxStack bounds a goroutine's stack, so that runaway recursion ends
	// in a stack overflow rather than in the memory bound.
	maxStack = 64 << 20
)

// Worker runs the worker side of Eval, and then exits, when the process was
// started as a worker by Eval (the environment variable CUP_CUEEVAL_WORKER
// is set); otherwise it returns at once. A program that
// calls Eval calls Worker first thing in main, and a test binary in
// TestMain, before it parses flags or starts anything.
//
// A worker reads one request from stdin (bounded by the size Eval gives
// it), evaluates it with at most two threads of Go code and a watchdog on
// its heap, writes one response to stdout and exits 0.
func Worker() {
	size, ok := os.LookupEnv(envWorker)
	if !ok {
		workerReady.Store(true)
		return
	}
	os.Exit(work(size))
}

// work serves one request of size bytes on stdin and returns the exit
// code.
func work(size string) int {
	runtime.GOMAXPROCS(min(maxProcs, runtime.GOMAXPROCS(0)))
	n, err := strconv.Atoi(size)
	if err != nil || n < 0 {
		fmt.Fprintf(os.Stderr, "cueeval worker: %s=%q is not a request size\n", envWorker, size)
		return exitBadRequest
	}
	data, err := io.ReadAll(io.LimitReader(os.Stdin, int64(n)+1))
	if err != nil || len(data) != n {
		fmt.Fprintf(os.Stderr, "cueeval worker: read %d bytes of a %d-byte request: %v\n", len(data), n, err)
		return exitBadRequest
	}
	var req request
	if err := json.Unmarshal(data, &req); err != nil {
		fmt.Fprintf(os.Stderr, "cueeval worker: decoding the request: %v\n", err)
		return exitBadRequest
	}
	data = nil

	// The runtime collects garbage harder as the heap nears three quarters
	// of the bound, and the watchdog ends the process past the bound.
	debug.SetMemoryLimit(req.MaxMemory / 4 * 3)
	debug.SetMaxStack(int(max(1<<20, min(maxStack, req.MaxMemory/4))))
	go watchdog(req.MaxMemory)
	time.AfterFunc(req.Timeout+fuseGrace, func() { os.Exit(exitTimeout) })

	resp := evaluate(&req)
	if err := json.NewEncoder(os.Stdout).Encode(resp); err != nil {
		fmt.Fprintf(os.Stderr, "cueeval worker: writing the response: %v\n", err)
		return exitBadRequest
	}
	return exitOK
}

// watchdog ends the process with exitMemory as soon as its heap objects
// and goroutine stacks take more than limit bytes.
func watchdog(limit int64) {
	samples := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/stacks:bytes"},
	}
	for range time.Tick(sampleEvery) {
		metrics.Read(samples)
		var used uint64
		for _, s := range samples {
			if s.Value.Kind() == metrics.KindUint64 {
				used += s.Value.Uint64()
			}
		}
		if used > uint64(limit) {
			fmt.Fprintf(os.Stderr, "cueeval worker: %d bytes in use, more than %d\n", used, limit)
			os.Exit(exitMemory)
		}
	}
}
