package app

import (
	"net"
	"net/http"
	"strings"
)

// LoopbackHosts are the names of this machine a browser may send in a
// Host header: localhost and its subdomains (RFC 6761), 127.0.0.1 and
// ::1. A cupd listening on loopback only answers to these (and to those
// its operator adds), so that a web page whose DNS name was rebound to
// 127.0.0.1 cannot call it from the user's browser.
var LoopbackHosts = []string{"localhost", "*.localhost", "127.0.0.1", "::1"}

// withHosts refuses, with 421 Misdirected Request, a request whose Host
// header names none of allowed; nil allows any. An entry is a host name or
// IP address (any port), "*.example.com" for its subdomains, or "*" for
// any host.
func withHosts(h http.Handler, allowed []string) http.Handler {
	if allowed == nil {
		return h
	}
	norm := make([]string, 0, len(allowed))
	for _, a := range allowed {
		a = strings.ToLower(strings.TrimSpace(a))
		if a == "*" {
			return h
		}
		norm = append(norm, strings.TrimSuffix(strings.TrimPrefix(a, "["), "]"))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hostAllowed(r.Host, norm) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			w.Header().Set("Connection", "close") // and read no body
			w.WriteHeader(http.StatusMisdirectedRequest)
			_, _ = w.Write([]byte("cupd does not answer to the host " + quoteHost(r.Host) +
				": it answers only to " + strings.Join(allowed, ", ") +
				" (a guard against DNS rebinding); the operator can add the name with cupd --allowed-hosts\n"))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// hostAllowed reports whether the Host header host (with or without a
// port) matches one of allowed, which are lower case and unbracketed.
func hostAllowed(host string, allowed []string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")), ".")
	if host == "" {
		return false
	}
	for _, a := range allowed {
		if suffix, ok := strings.CutPrefix(a, "*."); ok {
			if strings.HasSuffix(host, "."+suffix) {
				return true
			}
			continue
		}
		if host == a {
			return true
		}
	}
	return false
}

// quoteHost quotes a Host header for a message, cut to a sensible length.
func quoteHost(h string) string {
	if len(h) > 100 {
		h = h[:100] + "..."
	}
	return `"` + strings.ToValidUTF8(h, "?") + `"`
}
