package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/scm"
	"github.com/cup-dev/cup/source"
)

func TestToConnect(t *testing.T) {
	t.Parallel()
	passed := connect.NewError(connect.CodeAborted, errors.New("precondition failed"))
	for _, tc := range []struct {
		name    string
		err     error
		code    connect.Code
		message string // a part of the message; the whole of it for Internal
	}{
		{"connect error passes through", fmt.Errorf("wrapped: %w", passed), connect.CodeAborted, "precondition failed"},
		{"canceled", fmt.Errorf("reading: %w", context.Canceled), connect.CodeCanceled, "reading"},
		{"deadline", fmt.Errorf("reading: %w", context.DeadlineExceeded), connect.CodeDeadlineExceeded, "reading"},
		{"controller not found", fmt.Errorf("x: %w", controller.ErrNotFound), connect.CodeNotFound, "x"},
		{"core's not found", notFound(&Type{Singular: "flag"}, "default", "x"), connect.CodeNotFound, `flag "x" not found in namespace "default"`},
		{"core's failed precondition", &sentinelError{errPreconditionFailed, "precondition failed: it changed"}, connect.CodeAborted, "precondition failed: it changed"},
		{"controller invalid", fmt.Errorf("x: %w", controller.ErrInvalid), connect.CodeInvalidArgument, "x"},
		{"controller malformed", fmt.Errorf("flags/a.yaml: %w", controller.ErrMalformed), connect.CodeFailedPrecondition, "flags/a.yaml"},
		{"controller failed", fmt.Errorf(`module "flipt": get flipt.io/v1alpha1 Flag default/a: %w: exit code 1: flag default/a: boom`, controller.ErrFailed), connect.CodeInternal, `module "flipt": get flipt.io/v1alpha1 Flag default/a: controller failed: exit code 1: flag default/a: boom: the controller failed, not your request: the operator must check it`},
		{"controller limit", fmt.Errorf(`module "flags": get default/a: %w: memory`, controller.ErrLimit), connect.CodeResourceExhausted, `module "flags"`},
		{"revision not found", fmt.Errorf("%w: nope", source.ErrRevisionNotFound), connect.CodeNotFound, "nope"},
		{"invalid revision", fmt.Errorf("%w: a..b", source.ErrInvalidRevision), connect.CodeInvalidArgument, "a..b"},
		{"invalid path", fmt.Errorf("%w: ../x", source.ErrInvalidPath), connect.CodeInvalidArgument, "../x"},
		{"not writable", fmt.Errorf("%w: v1", source.ErrNotWritable), connect.CodeFailedPrecondition, "v1"},
		{"conflict", fmt.Errorf("main: %w", source.ErrConflict), connect.CodeAborted, "main"},
		{"unavailable", fmt.Errorf("%w: gone", source.ErrUnavailable), connect.CodeUnavailable, "gone"},
		{"change set not found", fmt.Errorf(`change set "cup/x": %w`, source.ErrChangeSetNotFound), connect.CodeNotFound, `change set "cup/x"`},
		{"idempotency key reused", fmt.Errorf(`idempotency key "k": %w`, source.ErrIdempotencyKeyReused), connect.CodeFailedPrecondition, `"k"`},
		{"rejected push", fmt.Errorf("%w: push to main: main is protected", source.ErrRejected), connect.CodeFailedPrecondition, "main is protected"},
		{"invalid message", fmt.Errorf("%w: control character U+0000", source.ErrInvalidMessage), connect.CodeInvalidArgument, "U+0000"},
		{"change set owner", fmt.Errorf("%w: %q", source.ErrChangeSetOwner, "cup/x"), connect.CodePermissionDenied, "put on changesets.cup.dev"},
		{"unknown proposal", fmt.Errorf(`proposal "9": %w`, scm.ErrNotFound), connect.CodeNotFound, `proposal "9"`},
		{"SCM lacks the repository", notCallersNotFound(fmt.Errorf("pushed branch cup/a1, opening its proposal: %w", scm.ErrNotFound)),
			connect.CodeUnavailable, "cup's repository, or hides it from cupd's credentials: pushed branch cup/a1"},
		{"SCM refused cupd's credentials", fmt.Errorf("pushed branch cup/a1, opening its proposal: %w", scm.ErrUnauthenticated),
			connect.CodeUnavailable, "cup/a1, opening its proposal: the SCM refused the credentials: it refused cupd's credentials, not yours"},
		{"SCM denied cupd", fmt.Errorf("pushed branch cup/a1: %w", scm.ErrPermissionDenied), connect.CodeUnavailable, "cupd's credentials (not yours)"},
		{"SCM rate limit", fmt.Errorf("pushed branch cup/a1: %w", scm.ErrRateLimited), connect.CodeUnavailable, "retry in a few minutes"},
		{"SCM down", fmt.Errorf("listing proposals: %w", scm.ErrUnavailable), connect.CodeUnavailable, "listing proposals: the SCM is unavailable: retry later"},
		{"SCM hint said already", fmt.Errorf("%w (HTTP 502): retry later", scm.ErrUnavailable), connect.CodeUnavailable, "(HTTP 502): retry later"},
		{"SCM invalid", fmt.Errorf("pushed branch cup/a1: %w: base branch main does not exist", scm.ErrInvalid), connect.CodeFailedPrecondition, "base branch main"},
		{"unknown", errors.New("secret detail"), connect.CodeInternal, internalMessage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ce := toConnect(tc.err)
			if ce.Code() != tc.code {
				t.Fatalf("code = %v, want %v", ce.Code(), tc.code)
			}
			if tc.code == connect.CodeInternal {
				if ce.Message() != tc.message {
					t.Fatalf("message = %q, want only %q", ce.Message(), tc.message)
				}
				return
			}
			if !strings.Contains(ce.Message(), tc.message) {
				t.Fatalf("message = %q, want it to mention %q", ce.Message(), tc.message)
			}
			for _, m := range codeFor {
				if m.hint != "" && strings.Count(ce.Message(), m.hint) > 1 {
					t.Fatalf("message = %q repeats %q", ce.Message(), m.hint)
				}
			}
		})
	}
	if toConnect(nil) != nil {
		t.Fatal("toConnect(nil) != nil")
	}
	twice := notCallersNotFound(notCallersNotFound(scm.ErrNotFound))
	if strings.Count(twice.Error(), errSCMRepository.Error()) != 1 {
		t.Errorf("notCallersNotFound twice = %q, want the mark once", twice)
	}
	for _, m := range codeFor {
		if got := toConnect(fmt.Errorf("w: %w", m.err)).Code(); got != m.code {
			t.Errorf("%v maps to %v, want %v", m.err, got, m.code)
		}
	}
}

// TestLogFailureLevels checks that only cupd's own faults are logged at
// error level: never what the caller got wrong.
func TestLogFailureLevels(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err   error
		level slog.Level
	}{
		{errors.New("a bug"), slog.LevelError},
		{connect.NewError(connect.CodeDataLoss, errors.New("lost")), slog.LevelError},
		{fmt.Errorf("x: %w", controller.ErrFailed), slog.LevelError},
		{fmt.Errorf("x: %w", source.ErrUnavailable), slog.LevelWarn},
		{fieldError("name", "bad"), slog.LevelDebug},
		{fmt.Errorf("x: %w", controller.ErrNotFound), slog.LevelDebug},
		{&sentinelError{errPreconditionFailed, "changed"}, slog.LevelDebug},
		{connect.NewError(connect.CodePermissionDenied, errors.New("no")), slog.LevelDebug},
		{connect.NewError(connect.CodeResourceExhausted, errors.New("busy")), slog.LevelDebug},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), slog.LevelDebug},
	} {
		var b bytes.Buffer
		logFailure(t.Context(), slog.New(slog.NewTextHandler(&b, &slog.HandlerOptions{Level: slog.LevelDebug})), "/p", tc.err)
		if want := "level=" + tc.level.String(); !strings.Contains(b.String(), want) {
			t.Errorf("%v (%s): logged %q, want %s", tc.err, toConnect(tc.err).Code(), b.String(), want)
		}
	}
}
