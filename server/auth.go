package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"connectrpc.com/connect"

	"github.com/cup-dev/cup/auth"
	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
)

// WithAuthorization turns authentication and authorization on: every call
// but /healthz and /readyz must carry credentials that authn accepts, and
// may do only what authz allows (deny by default). Discovery shows only the
// types the caller may use, and every write records the caller in its
// commit and proposal. Default: off, everyone may do everything (the demo).
func WithAuthorization(authn auth.Authenticator, authz auth.Authorizer) Option {
	return func(c *config) { c.authn, c.authz = authn, authz }
}

// wwwAuthenticate is the challenge sent with Unauthenticated answers.
const wwwAuthenticate = `Bearer realm="cup"`

// authenticate establishes the caller of every request before h runs and
// puts the identity into the request's context. Failures answer in the
// request's own protocol (Connect, gRPC, gRPC-Web, or the REST form's JSON).
func (s *Server) authenticate(h http.Handler) http.Handler {
	if s.cfg.authz == nil {
		return h
	}
	ew := connect.NewErrorWriter()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := s.cfg.authn.Authenticate(r)
		if err != nil {
			ce := authError(err)
			procedure := r.Method + " " + r.URL.Path
			if ce.Code() == connect.CodeUnauthenticated {
				logFailure(r.Context(), s.cfg.logger, procedure, ce)
				w.Header().Set("WWW-Authenticate", wwwAuthenticate)
			} else {
				// The caller learns nothing of the cause; the log does.
				s.cfg.logger.WarnContext(r.Context(), "call failed", "procedure", procedure, "code", ce.Code().String(), "error", err)
			}
			if ew.IsSupported(r) {
				_ = ew.Write(w, r, ce)
				return
			}
			writeErrorJSON(w, ce)
			return
		}
		h.ServeHTTP(w, r.WithContext(auth.NewContext(r.Context(), id)))
	})
}

// authorize fails with PermissionDenied unless the caller may do what a
// describes, and with Unauthenticated when the request has no caller. It
// runs before the type is looked up, so that a denied caller learns
// nothing about what is served.
func (s *Server) authorize(ctx context.Context, a auth.Attributes) error {
	if s.cfg.authz == nil {
		return nil
	}
	id, ok := auth.FromContext(ctx)
	if !ok {
		return connect.NewError(connect.CodeUnauthenticated, errors.New("no credentials: send a bearer token in the Authorization header"))
	}
	if s.cfg.authz.Allowed(id, a) {
		return nil
	}
	return connect.NewError(connect.CodePermissionDenied, denial(id, a))
}

// allowed reports whether the caller may do what a describes, for parts of
// an answer that are left out rather than refused.
func (s *Server) allowed(ctx context.Context, a auth.Attributes) bool {
	return s.authorize(ctx, a) == nil
}

// denial says what the caller may not do, in the request's own terms.
func denial(id *auth.Identity, a auth.Attributes) error {
	what := a.Plural + "." + a.Group
	if a.Name != "" {
		what += " " + strconv.Quote(a.Name)
	}
	where := ""
	if a.Namespace != "" {
		where = " in namespace " + strconv.Quote(a.Namespace)
	}
	return fmt.Errorf("%s %q may not %s %s%s: ask an administrator for a role that grants it",
		subjectKind(id), id.User, a.Verb, what, where)
}

func subjectKind(id *auth.Identity) string {
	if id.Method == auth.MethodCertificate {
		return "certificate subject"
	}
	return "user"
}

// requester names the caller for commits and proposals; empty when
// authentication is off.
func requester(ctx context.Context) string {
	if id, ok := auth.FromContext(ctx); ok {
		return id.User
	}
	return ""
}

// visibleDefinitions is what discovery shows the caller: every definition
// without a policy, otherwise those the caller may use in some way.
func (s *Server) visibleDefinitions(ctx context.Context) []*cupv1alpha1.ResourceDefinition {
	if s.cfg.authz == nil {
		return s.defs
	}
	id, ok := auth.FromContext(ctx)
	if !ok {
		return nil
	}
	out := make([]*cupv1alpha1.ResourceDefinition, 0, len(s.defs))
	for _, d := range s.defs {
		if s.cfg.authz.Visible(id, d.Group, d.Names.Plural) {
			out = append(out, d)
		}
	}
	return out
}
