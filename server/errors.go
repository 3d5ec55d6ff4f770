package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"

	"github.com/cup-dev/cup/auth"
	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/scm"
	"github.com/cup-dev/cup/source"
)

// internalMessage is all a caller learns of an unexpected failure; the real
// error goes to the log.
const internalMessage = "internal error: the server log has the details"

// codeFor maps the contract packages' sentinel errors to Connect codes, in
// order: the first sentinel an error wraps decides. A hint, when set, is
// added to the message unless it says so already.
//
// The SCM's sentinels reach here from writes in proposal mode (the branch is
// pushed, then the proposal opened) and from the ProposalService. Apart from
// a proposal id that names nothing (NotFound) the caller did nothing wrong:
// cupd's own credentials, the host or the host's rate limit failed. So they
// are Unavailable (HTTP 503, which clients may retry), never Unauthenticated
// or PermissionDenied, which would blame the caller's credentials, nor
// ResourceExhausted, which would blame the caller's quota; the proposing
// source's message names the branch it pushed, so nothing written goes
// untold. A request the host finds invalid (a proposal for a branch it does
// not have) is FailedPrecondition, with the host's words.
var codeFor = []struct {
	err  error
	code connect.Code
	hint string
}{
	{controller.ErrNotFound, connect.CodeNotFound, ""},
	{errRevisionGone, connect.CodeFailedPrecondition, ""},
	{errWatchTooSlow, connect.CodeResourceExhausted, ""},
	{errNoNamespaces, connect.CodeFailedPrecondition, ""},
	{errPreconditionFailed, connect.CodeAborted, ""},
	{errAlreadyExists, connect.CodeAlreadyExists, ""},
	{controller.ErrInvalid, connect.CodeInvalidArgument, ""},
	{controller.ErrMalformed, connect.CodeFailedPrecondition, ""},
	{controller.ErrLimit, connect.CodeResourceExhausted, ""},
	{controller.ErrFailed, connect.CodeInternal, "the controller failed, not your request: the operator must check it"},
	{source.ErrRevisionNotFound, connect.CodeNotFound, ""},
	{source.ErrInvalidRevision, connect.CodeInvalidArgument, ""},
	{source.ErrInvalidPath, connect.CodeInvalidArgument, ""},
	{source.ErrNotWritable, connect.CodeFailedPrecondition, ""},
	{source.ErrConflict, connect.CodeAborted, ""},
	{source.ErrUnavailable, connect.CodeUnavailable, ""},
	{source.ErrChangeSetNotFound, connect.CodeNotFound, ""},
	{source.ErrIdempotencyKeyReused, connect.CodeFailedPrecondition, ""},
	{source.ErrRejected, connect.CodeFailedPrecondition, ""},
	{source.ErrInvalidMessage, connect.CodeInvalidArgument, ""},
	{source.ErrChangeSetOwner, connect.CodePermissionDenied,
		"leave change_set empty to start your own, or ask an administrator for put on changesets.cup.dev (cluster-wide)"},
	{errSCMRepository, connect.CodeUnavailable, "the operator must check cupd's SCM repository and token"},
	{scm.ErrNotFound, connect.CodeNotFound, ""},
	{scm.ErrUnauthenticated, connect.CodeUnavailable,
		"it refused cupd's credentials, not yours: the operator must renew cupd's SCM token; retry then"},
	{scm.ErrPermissionDenied, connect.CodeUnavailable,
		"cupd's credentials (not yours) may not do this: the operator must let cupd's SCM token read and open pull or merge requests; retry then"},
	{scm.ErrRateLimited, connect.CodeUnavailable, "cupd's rate limit at the SCM is spent: retry in a few minutes"},
	{scm.ErrUnavailable, connect.CodeUnavailable, "retry later"},
	{scm.ErrInvalid, connect.CodeFailedPrecondition, ""},
}

// errPreconditionFailed is the core's sentinel for a write whose
// resourceVersion precondition does not hold.
var errPreconditionFailed = errors.New("precondition failed")

// errAlreadyExists is the core's sentinel for a create of a resource that
// exists.
var errAlreadyExists = errors.New("already exists")

// sentinelError is an error of the core: msg is all the caller is told,
// and the sentinel it wraps decides the code.
type sentinelError struct {
	sentinel error
	msg      string
}

func (e *sentinelError) Error() string { return e.msg }
func (e *sentinelError) Unwrap() error { return e.sentinel }

// errSCMRepository marks an scm.ErrNotFound that is not about anything the
// caller named: while proposing a write or listing proposals, the host did
// not find cup's repository (or hid it from cupd's credentials).
var errSCMRepository = errors.New("the SCM does not know cup's repository, or hides it from cupd's credentials")

// notCallersNotFound marks err with errSCMRepository when it wraps
// scm.ErrNotFound, so that it maps to Unavailable rather than NotFound.
func notCallersNotFound(err error) error {
	if errors.Is(err, scm.ErrNotFound) && !errors.Is(err, errSCMRepository) {
		return fmt.Errorf("%w: %w", errSCMRepository, err)
	}
	return err
}

// toConnect turns any error into a *connect.Error: a *connect.Error passes
// through, context errors become Canceled or DeadlineExceeded, the contract
// sentinels map by errors.Is, and anything else is Internal with a fixed
// message (and logged, with the real error, by the caller's interceptor).
func toConnect(err error) *connect.Error {
	if err == nil {
		return nil
	}
	var ce *connect.Error
	if errors.As(err, &ce) {
		return ce
	}
	switch {
	case errors.Is(err, context.Canceled):
		return connect.NewError(connect.CodeCanceled, err)
	case errors.Is(err, context.DeadlineExceeded):
		return connect.NewError(connect.CodeDeadlineExceeded, err)
	}
	for _, m := range codeFor {
		if errors.Is(err, m.err) {
			if m.hint != "" && !strings.Contains(err.Error(), m.hint) {
				err = fmt.Errorf("%w: %s", err, m.hint)
			}
			return connect.NewError(m.code, err)
		}
	}
	return connect.NewError(connect.CodeInternal, errors.New(internalMessage))
}

// authError maps an authenticator's error: bad or missing credentials are
// Unauthenticated with the authenticator's reason (which never repeats the
// credential); anything else is the authenticator failing (an issuer's keys
// out of reach), which is Unavailable without details.
func authError(err error) *connect.Error {
	if errors.Is(err, auth.ErrUnauthenticated) || errors.Is(err, auth.ErrNoCredentials) {
		return connect.NewError(connect.CodeUnauthenticated, errors.New(err.Error()))
	}
	return connect.NewError(connect.CodeUnavailable,
		errors.New("cannot check credentials now: the identity provider is out of reach; retry later"))
}

// FieldViolation is one problem with one field of a request.
type FieldViolation struct {
	// Field is the path of the field, e.g. "resource.spec.enabled".
	Field string
	// Description says what is wrong.
	Description string
}

// invalidArgument builds an InvalidArgument error naming each field, with a
// google.rpc.BadRequest detail for clients that read details.
func invalidArgument(violations ...FieldViolation) *connect.Error {
	// An answer repeats no more of a bad request than a person reads: a
	// spec of a million unknown keys must not come back as a megabyte.
	var more int
	if len(violations) > maxViolations {
		more = len(violations) - maxViolations
		violations = violations[:maxViolations]
	}
	parts := make([]string, 0, len(violations)+1)
	detail := &errdetails.BadRequest{}
	for _, v := range violations {
		v.Field, v.Description = truncate(v.Field, maxViolationText), truncate(v.Description, maxViolationText)
		parts = append(parts, v.Field+": "+v.Description)
		detail.FieldViolations = append(detail.FieldViolations, &errdetails.BadRequest_FieldViolation{
			Field: v.Field, Description: v.Description,
		})
	}
	if more > 0 {
		parts = append(parts, fmt.Sprintf("and %d more", more))
	}
	ce := connect.NewError(connect.CodeInvalidArgument, errors.New(strings.Join(parts, "; ")))
	if d, err := connect.NewErrorDetail(detail); err == nil {
		ce.AddDetail(d)
	}
	return ce
}

// Bounds on what an InvalidArgument error repeats of a request.
const (
	maxViolations    = 20
	maxViolationText = 512
)

func fieldError(field, format string, args ...any) *connect.Error {
	return invalidArgument(FieldViolation{Field: field, Description: fmt.Sprintf(format, args...)})
}

// logFailure logs one failed call: cupd's own faults (Internal, Unknown,
// DataLoss) at error level with the real error; a service cupd depends on
// being out of reach (Unavailable) at warning level; the caller's
// mistakes and everything else a caller is told (bad input, not found,
// denied, limits) at debug level, never at error level.
func logFailure(ctx context.Context, logger *slog.Logger, procedure string, err error) {
	ce := toConnect(err)
	switch c := ce.Code(); {
	case fault(c):
		logger.ErrorContext(ctx, "call failed", "procedure", procedure, "code", c.String(), "error", err)
	case c == connect.CodeUnavailable:
		logger.WarnContext(ctx, "call failed", "procedure", procedure, "code", c.String(), "error", ce.Message())
	default:
		logger.DebugContext(ctx, "call rejected", "procedure", procedure, "code", c.String(), "error", ce.Message())
	}
}
