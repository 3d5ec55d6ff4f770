package server

import "time"

// The defaults of the Server's and NewHTTPServer's options, each declared
// here once: cupd's flags take their defaults from these constants.
//
// Every option taking a number follows one rule: zero keeps the default,
// and less than zero lifts the bound where the option can go without one
// (each WithX says what it does otherwise). A program that leaves an
// option out and one that passes zero get the same server.
const (
	// DefaultMaxRequestBytes is the default of WithMaxRequestBytes: 4 MiB.
	DefaultMaxRequestBytes = 4 << 20
	// DefaultCacheBytes is the default of WithCacheBytes: 256 MiB.
	DefaultCacheBytes = 256 << 20
	// DefaultMaxListPage is the default of WithMaxListPage: 10,000.
	DefaultMaxListPage = 10000
	// DefaultRequestTimeout is the default of WithRequestTimeout: a minute.
	DefaultRequestTimeout = time.Minute
	// DefaultMaxConcurrentWrites is the default of WithMaxConcurrentWrites.
	DefaultMaxConcurrentWrites = 128
	// DefaultMaxJSONDepth is the default of WithMaxJSONDepth: 64, as
	// Kubernetes' guard on JSON bodies.
	DefaultMaxJSONDepth = 64
	// DefaultMaxResourceBytes is the default of WithMaxResourceBytes: 8 MiB.
	DefaultMaxResourceBytes = 8 << 20
	// DefaultMaxInflightRequestBytes is the default of
	// WithMaxInflightRequestBytes: 8 MiB, two bodies of the default
	// DefaultMaxRequestBytes.
	DefaultMaxInflightRequestBytes = 2 * DefaultMaxRequestBytes
	// DefaultMaxQueuedControllerCalls is the default bound of controller
	// calls waiting for one of the slots WithMaxConcurrentControllerCalls
	// bounds. A waiting call holds a goroutine and its request, a few KiB,
	// and waits no longer than its deadline (cupd --request-timeout).
	DefaultMaxQueuedControllerCalls = 256

	// DefaultIdleTimeout is the default of WithIdleTimeout: two minutes.
	DefaultIdleTimeout = 2 * time.Minute
	// DefaultMaxHeaderBytes is the default of WithMaxHeaderBytes: 64 KiB.
	DefaultMaxHeaderBytes = 64 << 10
	// DefaultMaxConcurrentStreams is the default of
	// WithMaxConcurrentStreams: 100, the least RFC 9113 recommends.
	DefaultMaxConcurrentStreams = 100
)

// orDefault returns v, or def when v is zero.
func orDefault[T int | int64 | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}
