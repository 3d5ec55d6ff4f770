package gitlab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	gitlab "gitlab.com/gitlab-org/api/client-go"

	"github.com/cup-dev/cup/scm"
	"github.com/cup-dev/cup/scm/internal/hostapi"
)

// wrapError maps an error from GitLab's client to the scm sentinels,
// keeping GitLab's message. op says what was being done. The error of a
// context that ended passes through; the client's messages carry no
// credentials, as the transport adds them.
func wrapError(ctx context.Context, op string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("gitlab: %s: %w", op, ctxErr)
	}
	var resp *gitlab.ErrorResponse
	switch {
	case errors.Is(err, gitlab.ErrNotFound):
		// client-go answers every 404 with this sentinel and drops
		// GitLab's message ("404 Not found", "404 Project Not Found").
		return fmt.Errorf("gitlab: %s: %w (merge request or project)", op, scm.ErrNotFound)
	case errors.As(err, &resp) && resp.Response != nil:
		code := resp.Response.StatusCode
		return fmt.Errorf("gitlab: %s: %w: HTTP %d: %s", op, scm.ForStatus(code), code, message(resp))
	case scm.IsSentinel(err):
		// The transport's own verdict, such as a token source that
		// failed (ErrUnauthenticated).
		return fmt.Errorf("gitlab: %s: %w", op, err)
	default:
		// Transport failures, including the transport's own timeout,
		// and answers that are not GitLab's JSON.
		return fmt.Errorf("gitlab: %s: %w: %v", op, scm.ErrUnavailable, err)
	}
}

// message returns GitLab's message from an error answer: the "message" or
// "error" of its JSON body, a short plain-text body (as the rate limiter
// sends) or else the status text (a proxy's HTML page says no more),
// truncated as hostapi.TruncateMessage does.
func message(resp *gitlab.ErrorResponse) string {
	var body struct {
		Message any    `json:"message"`
		Error   string `json:"error"`
	}
	msg := ""
	switch err := json.Unmarshal(resp.Body, &body); {
	case err == nil && body.Message != nil:
		msg = formatMessage(body.Message)
	case err == nil && body.Error != "":
		msg = body.Error
	case err != nil && strings.HasPrefix(resp.Response.Header.Get("Content-Type"), "text/plain"):
		msg = strings.TrimSpace(string(resp.Body))
	}
	if msg == "" {
		msg = http.StatusText(resp.Response.StatusCode)
	}
	return hostapi.TruncateMessage(msg)
}

// formatMessage formats GitLab's "message", which is a string, a list of
// strings, or validation errors by field: {"source_branch": ["does not
// exist"]} becomes "source_branch does not exist".
func formatMessage(m any) string {
	switch m := m.(type) {
	case string:
		return m
	case []any:
		parts := make([]string, 0, len(m))
		for _, v := range m {
			parts = append(parts, formatMessage(v))
		}
		return strings.Join(parts, "; ")
	case map[string]any:
		parts := make([]string, 0, len(m))
		for _, k := range slices.Sorted(maps.Keys(m)) {
			parts = append(parts, k+" "+formatMessage(m[k]))
		}
		return strings.Join(parts, "; ")
	default:
		b, _ := json.Marshal(m)
		return string(b)
	}
}
