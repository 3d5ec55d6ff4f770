package hostapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/cup-dev/cup/scm/internal/hostapi"
)

func TestIsHTTPURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		url  string
		want bool
	}{
		{"https://github.example.com/api/v3/", true},
		{"http://127.0.0.1:3000", true},
		{"https://example.com/gitlab/?x=1", true},
		{"github.example.com/api/v3/", false},
		{"ftp://example.com/", false},
		{"https:///path", false},
		{"mailto:bot@example.com", false},
		{"", false},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			t.Parallel()
			u, err := url.Parse(tt.url)
			if err != nil {
				t.Fatal(err)
			}
			if got := hostapi.IsHTTPURL(u); got != tt.want {
				t.Errorf("IsHTTPURL(%q) = %v, want %v", tt.url, got, tt.want)
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	date := func(d time.Duration) string { return now.Add(d).Format(http.TimeFormat) }
	tests := []struct {
		name   string
		header http.Header
		want   time.Duration
		wantOK bool
	}{
		{"none", http.Header{}, 0, false},
		{"blank", http.Header{"Retry-After": {" "}}, 0, false},
		{"seconds", http.Header{"Retry-After": {"120"}}, 2 * time.Minute, true},
		{"seconds with spaces", http.Header{"Retry-After": {" 5 "}}, 5 * time.Second, true},
		{"zero", http.Header{"Retry-After": {"0"}}, 0, true},
		{"negative", http.Header{"Retry-After": {"-5"}}, 0, true},
		{"huge", http.Header{"Retry-After": {"99999999999"}}, (1 << 31) * time.Second, true},
		{"date", http.Header{"Retry-After": {date(time.Minute)}}, time.Minute, true},
		{"past date", http.Header{"Retry-After": {date(-time.Minute)}}, 0, true},
		// The host's clock runs an hour ahead: its date is a minute after
		// its own now.
		{"skewed date", http.Header{"Retry-After": {date(time.Hour + time.Minute)}, "Date": {date(time.Hour)}}, time.Minute, true},
		{"garbage", http.Header{"Retry-After": {"soon"}}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := hostapi.RetryAfter(tt.header, now)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("RetryAfter = %v, %v; want %v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestLocalTime(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	at := now.Add(time.Hour)
	if got := hostapi.LocalTime(http.Header{}, at, now); !got.Equal(at) {
		t.Errorf("without Date: LocalTime = %v, want %v", got, at)
	}
	h := http.Header{"Date": {now.Add(-time.Minute).Format(http.TimeFormat)}}
	if got, want := hostapi.LocalTime(h, at, now), at.Add(time.Minute); !got.Equal(want) {
		t.Errorf("host a minute behind: LocalTime = %v, want %v", got, want)
	}
}

func TestTruncateMessage(t *testing.T) {
	t.Parallel()
	const n = hostapi.MaxMessage
	tests := []struct {
		name string
		msg  string
		want string
	}{
		{"short", "Not Found", "Not Found"},
		{"at the limit", strings.Repeat("a", n), strings.Repeat("a", n)},
		{"over the limit", strings.Repeat("a", n+1), strings.Repeat("a", n) + "…"},
		// "é" is two bytes, the second of them at the limit.
		{"two-byte rune across the limit", strings.Repeat("a", n-1) + "éz", strings.Repeat("a", n-1) + "…"},
		{"two-byte rune at the limit", strings.Repeat("a", n-2) + "éz", strings.Repeat("a", n-2) + "é…"},
		// "😀" is four bytes.
		{"four-byte rune across the limit", strings.Repeat("a", n-3) + "😀z", strings.Repeat("a", n-3) + "…"},
		{"four-byte rune at the limit", strings.Repeat("a", n-4) + "😀z", strings.Repeat("a", n-4) + "😀…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := hostapi.TruncateMessage(tt.msg)
			if got != tt.want {
				t.Errorf("TruncateMessage = %q, want %q", got, tt.want)
			}
			if !utf8.ValidString(got) {
				t.Errorf("TruncateMessage = %q, not valid UTF-8", got)
			}
		})
	}
}

func TestCutPrefixFold(t *testing.T) {
	t.Parallel()
	prefixes := []string{"draft:", "[draft]", "(draft)"}
	tests := []struct {
		title  string
		want   string
		wantOK bool
	}{
		{"Draft: Add flag", " Add flag", true},
		{"DRAFT:Add flag", "Add flag", true},
		{"[Draft] Add flag", " Add flag", true},
		{"(draft)", "", true},
		{"Add flag", "Add flag", false},
		{"Drafting rules", "Drafting rules", false},
		{"Draft", "Draft", false},
		{"", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.title, func(t *testing.T) {
			t.Parallel()
			got, ok := hostapi.CutPrefixFold(tt.title, prefixes)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("CutPrefixFold(%q) = %q, %v; want %q, %v", tt.title, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}
