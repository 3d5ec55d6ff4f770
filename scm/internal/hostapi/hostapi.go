// Package hostapi holds what the scm transport and the SCM adapters
// (scm/github, scm/gitlab, scm/gitea) share about talking to a host's API:
// checking a base URL, reading Retry-After, shortening a host's message and
// reading a title's marker. It is internal so that none of it becomes part
// of the scm contract.
package hostapi

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// IsHTTPURL reports whether u is an absolute http or https URL with a
// host, as the base URL of a host's API must be.
func IsHTTPURL(u *url.URL) bool {
	return (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// RetryAfter reads an answer's Retry-After header, delay seconds or an
// HTTP date, as the wait it asks for; false when there is none or it is
// neither. Delays are capped at 2³¹ seconds and negative ones read as 0. A
// date is read against the answer's Date header (see LocalTime), so a
// skewed local clock does not shorten the wait.
func RetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	s := strings.TrimSpace(h.Get("Retry-After"))
	if s == "" {
		return 0, false
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Duration(min(max(n, 0), 1<<31)) * time.Second, true
	}
	if at, err := http.ParseTime(s); err == nil {
		return max(LocalTime(h, at, now).Sub(now), 0), true
	}
	return 0, false
}

// LocalTime converts a time at that a host gave in an answer with header h
// into the local clock's, now being the local time: it keeps at's distance
// from the answer's Date header. Without a Date header the clocks are taken
// to agree.
func LocalTime(h http.Header, at, now time.Time) time.Time {
	date, err := http.ParseTime(h.Get("Date"))
	if err != nil {
		return at
	}
	return now.Add(at.Sub(date))
}

// MaxMessage is how many bytes of a host's message TruncateMessage keeps:
// enough for any message a host writes for people, while a proxy's HTML
// error page can be long.
const MaxMessage = 300

// TruncateMessage returns msg if it is at most MaxMessage bytes long, and
// otherwise its longest prefix of at most MaxMessage bytes that ends on a
// rune boundary, followed by "…".
func TruncateMessage(msg string) string {
	if len(msg) <= MaxMessage {
		return msg
	}
	cut := MaxMessage
	// A rune is at most utf8.UTFMax bytes; in a string that is not valid
	// UTF-8 the cut may fall between stray continuation bytes.
	for i := 1; i < utf8.UTFMax && !utf8.RuneStart(msg[cut]); i++ {
		cut--
	}
	return msg[:cut] + "…"
}

// CutPrefixFold returns s without the first of prefixes that s starts with,
// compared without regard to case (Unicode simple folding, as
// strings.EqualFold), and true; or s and false when s starts with none of
// them. It is how adapters read a host's markers in titles, such as
// GitLab's "Draft:" or Gitea's "WIP:".
func CutPrefixFold(s string, prefixes []string) (string, bool) {
	for _, p := range prefixes {
		if len(s) >= len(p) && strings.EqualFold(s[:len(p)], p) {
			return s[len(p):], true
		}
	}
	return s, false
}
