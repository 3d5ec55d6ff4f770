package scm

import (
	"cmp"
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
)

// Redacted replaces secrets in the strings Redact returns.
const Redacted = "[REDACTED]"

// Redact returns s with every occurrence of each non-empty secret replaced
// by Redacted, including the forms URL escaping gives it (in a query or a
// path), so that a message quoting a URL leaks no credentials either.
// Longer secrets are replaced first, so that a secret containing another is
// hidden whole.
func Redact(s string, secrets ...string) string {
	var forms []string
	for _, secret := range secrets {
		if secret == "" {
			continue
		}
		forms = append(forms, secret, url.QueryEscape(secret), url.PathEscape(secret))
	}
	slices.SortFunc(forms, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	for _, f := range slices.Compact(forms) {
		s = strings.ReplaceAll(s, f, Redacted)
	}
	return s
}

// urlSecrets returns the credentials a URL may carry: its user information
// (the password, or a user name alone, as in https://<token>@github.com/)
// and the values of query parameters whose names suggest credentials, such
// as GitLab's private_token.
func urlSecrets(u *url.URL) []string {
	var secrets []string
	if u.User != nil {
		if p, ok := u.User.Password(); ok {
			secrets = append(secrets, p)
		} else {
			secrets = append(secrets, u.User.Username())
		}
	}
	if u.RawQuery == "" {
		return secrets
	}
	for name, values := range u.Query() {
		if sensitiveParam(name) {
			secrets = append(secrets, values...)
		}
	}
	return secrets
}

func sensitiveParam(name string) bool {
	name = strings.ToLower(name)
	switch name {
	case "key", "sig", "code":
		return true
	}
	for _, part := range []string{"token", "secret", "passw", "signature", "api_key", "apikey", "credential"} {
		if strings.Contains(name, part) {
			return true
		}
	}
	return false
}

// sanitize returns err, or when its message contains a secret, an error
// with the secrets redacted. The redacted error keeps what callers test
// for — context errors through errors.Is, and net.Error's Timeout — but not
// the original error, which would still carry the secrets.
func sanitize(err error, secrets ...string) error {
	msg := err.Error()
	redacted := Redact(msg, secrets...)
	if redacted == msg {
		return err
	}
	e := &redactedError{msg: redacted}
	for _, known := range []error{context.Canceled, context.DeadlineExceeded, os.ErrDeadlineExceeded} {
		if errors.Is(err, known) {
			e.cause = known
			break
		}
	}
	ne, ok := errors.AsType[net.Error](err)
	e.timeout = e.cause == context.DeadlineExceeded || e.cause == os.ErrDeadlineExceeded || ok && ne.Timeout()
	return e
}

type redactedError struct {
	msg     string
	cause   error
	timeout bool
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.cause }

// Timeout reports whether the original error was a timeout, as net.Error
// does.
func (e *redactedError) Timeout() bool { return e.timeout }

// Temporary is false; it completes net.Error.
func (e *redactedError) Temporary() bool { return false }
