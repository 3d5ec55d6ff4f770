package server_test

import (
	"net/http"
	"testing"

	"github.com/cup-dev/cup/server"
)

// TestHTTPOptionDefaults: zero keeps an option's default, less than zero
// lifts the bound (or, for headers and streams, leaves Go's own).
func TestHTTPOptionDefaults(t *testing.T) {
	t.Parallel()
	h := http.NotFoundHandler()
	for _, tc := range []struct {
		name                string
		opts                []server.HTTPOption
		idle                int64
		headerBytes, stream int
	}{
		{"none", nil, int64(server.DefaultIdleTimeout), server.DefaultMaxHeaderBytes, server.DefaultMaxConcurrentStreams},
		{"zero", []server.HTTPOption{server.WithIdleTimeout(0), server.WithMaxHeaderBytes(0), server.WithMaxConcurrentStreams(0)},
			int64(server.DefaultIdleTimeout), server.DefaultMaxHeaderBytes, server.DefaultMaxConcurrentStreams},
		{"negative", []server.HTTPOption{server.WithIdleTimeout(-1), server.WithMaxHeaderBytes(-1), server.WithMaxConcurrentStreams(-1)},
			-1, 0, 0},
		{"set", []server.HTTPOption{server.WithIdleTimeout(5), server.WithMaxHeaderBytes(7), server.WithMaxConcurrentStreams(9)},
			5, 7, 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := server.NewHTTPServer("127.0.0.1:0", h, tc.opts...)
			if int64(s.IdleTimeout) != tc.idle || s.MaxHeaderBytes != tc.headerBytes || s.HTTP2.MaxConcurrentStreams != tc.stream {
				t.Errorf("IdleTimeout, MaxHeaderBytes, MaxConcurrentStreams = %d, %d, %d; want %d, %d, %d",
					s.IdleTimeout, s.MaxHeaderBytes, s.HTTP2.MaxConcurrentStreams, tc.idle, tc.headerBytes, tc.stream)
			}
		})
	}
}
