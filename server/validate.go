package server

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"buf.build/go/protovalidate"
	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/source"
)

// maxPageSize is the largest page_size the proto's rules allow.
const maxPageSize = 100000

// validate checks msg against the protovalidate rules in the proto, the
// page size of a list against --max-list-page, and the commit message of
// a write against source.CheckMessage. A violation is InvalidArgument
// naming each offending field by its path in the proto.
func (s *Server) validate(msg any) error { return s.validateAs(msg, nil) }

// validateAs is validate for a request the caller wrote in another form:
// names maps a field's path in the proto (e.g. "resource_version") to what
// the caller wrote instead (e.g. the REST form's "If-Match" header).
// Fields it does not name keep their proto paths.
func (s *Server) validateAs(msg any, names map[string]string) error {
	m, ok := msg.(proto.Message)
	if !ok {
		return nil
	}
	name := func(field string) string {
		if n, ok := names[field]; ok {
			return n
		}
		return field
	}
	var vs []FieldViolation
	err := s.validator.Validate(m)
	var ve *protovalidate.ValidationError
	switch {
	case err == nil:
	case errors.As(err, &ve):
		vs = s.violations(ve, name)
	default:
		return connect.NewError(connect.CodeInternal, err)
	}
	// A page larger than the server gives is the caller's mistake, like
	// one larger than the proto allows, and retrying it cannot help: not
	// ResourceExhausted, which clients retry.
	if l, ok := msg.(*cupv1alpha1.ListRequest); ok && len(vs) == 0 && int(l.GetPageSize()) > s.maxPage() {
		vs = append(vs, FieldViolation{Field: name("page_size"), Description: s.pageSizeDescription(int64(l.GetPageSize()), name)})
	}
	// Selectors are parsed as the call will parse them, so that the REST
	// form names its parameters (labelSelector, fieldSelector).
	if len(vs) == 0 {
		switch r := msg.(type) {
		case *cupv1alpha1.ListRequest:
			_, vs = filterOf(r.GetLabelSelector(), r.GetFieldSelector(), name)
		case *cupv1alpha1.WatchRequest:
			_, vs = filterOf(r.GetLabelSelector(), r.GetFieldSelector(), name)
		}
	}
	if len(vs) > 0 {
		return invalidArgument(vs...)
	}
	return checkMessage(msg)
}

// maxPage is the most resources a page may ask for.
func (s *Server) maxPage() int {
	if m := s.cfg.maxListPage; m > 0 && m < maxPageSize {
		return m
	}
	return maxPageSize
}

func (s *Server) pageSizeDescription(n int64, name func(string) string) string {
	if n < 0 {
		return fmt.Sprintf("%d must not be negative: 0 asks for as many as the server gives in one page", n)
	}
	return fmt.Sprintf("%d is more than this server gives in one page: ask for at most %d (cupd --max-list-page) and follow %s for the rest",
		n, s.maxPage(), name("next_page_token"))
}

// violations describes protovalidate's violations in the caller's words:
// the field as the caller named it, the value they sent, and what it must
// be, once per field (a value can break a pattern and a length at once).
// On the REST form the name in the path and in the body are the same
// value: a bad one is told once, for the path.
func (s *Server) violations(ve *protovalidate.ValidationError, name func(string) string) []FieldViolation {
	vs := make([]FieldViolation, 0, len(ve.Violations))
	seen := map[string]bool{}
	said := map[string]bool{} // field: description
	for _, v := range ve.Violations {
		path := protovalidate.FieldPathString(v.Proto.GetField())
		if path == "" {
			path = "request"
		}
		if seen[path] {
			continue
		}
		seen[path] = true
		field := name(path)
		desc := s.describe(v, name)
		if top, ok := strings.CutPrefix(path, "resource.metadata."); ok && said[name(top)+": "+desc] {
			continue
		}
		said[field+": "+desc] = true
		vs = append(vs, FieldViolation{Field: field, Description: desc})
	}
	return vs
}

// shape says what the field v is about must look like, by the field's
// name and the message holding it; "" for fields with no known form.
func shape(v *protovalidate.Violation) string {
	els := v.Proto.GetField().GetElements()
	if len(els) == 0 {
		return ""
	}
	last := els[len(els)-1]
	const (
		dnsSubdomain = "a DNS subdomain: lowercase letters, digits, '-' and '.', each part between dots starting and ending with a letter or digit, at most 253 characters"
		dnsLabel     = "a DNS label: lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63 characters"
		branchChars  = "letters, digits and '._/+@-', starting with a letter or digit, without '..', at most 255 characters"
	)
	write, watch := false, false
	if fd := v.FieldDescriptor; fd != nil {
		switch fd.ContainingMessage().Name() {
		case "PutRequest", "DeleteRequest", "ApplyRequest":
			write = true
		case "WatchRequest":
			watch = true
		}
	}
	switch last.GetFieldName() {
	case "group", "name":
		return dnsSubdomain
	case "version", "plural", "namespace":
		return dnsLabel
	case "resource_version":
		return "a resourceVersion as a read returned it: lowercase hexadecimal digits"
	case "revision":
		if watch {
			return "a commit id (4 to 40 lowercase hexadecimal digits), or a resume_revision as an event gave it (<commit>.<n>)"
		}
		if write {
			return "a branch: " + branchChars
		}
		return "a branch, tag or commit: letters, digits and '._/+@~^-', starting with a letter or digit, without '..', at most 255 characters"
	case "until", "since":
		return "a branch, tag or commit: letters, digits and '._/+@~^-', starting with a letter or digit, without '..', at most 255 characters"
	case "change_set":
		return "a change set, a branch a write returned (WriteResult.branch): " + branchChars
	case "idempotency_key":
		return "1 to 128 printable ASCII characters without spaces"
	case "kind":
		return "a kind: an uppercase letter, then letters and digits, at most 63 characters"
	case "labels", "annotations":
		what := strings.TrimSuffix(last.GetFieldName(), "s")
		if v.Proto.GetForKey() {
			return "a " + what + " key: an optional DNS subdomain of at most 253 characters and '/', then 1 to 63 characters [A-Za-z0-9-_.], starting and ending with a letter or digit"
		}
		return "a " + what + " value: at most 63 characters [A-Za-z0-9-_.], starting and ending with a letter or digit, or empty"
	}
	return ""
}

// describe says what is wrong with the value v is about.
func (s *Server) describe(v *protovalidate.Violation, name func(string) string) string {
	rule := v.Proto.GetRuleId()
	forKey := v.Proto.GetForKey()
	if v.FieldDescriptor != nil && v.FieldDescriptor.Name() == "page_size" && v.FieldValue.IsValid() {
		return s.pageSizeDescription(v.FieldValue.Int(), name)
	}
	if rule == "required" {
		return "must be set"
	}
	value, isString := "", false
	if forKey {
		if els := v.Proto.GetField().GetElements(); len(els) > 0 {
			value, isString = els[len(els)-1].GetStringKey(), true
		}
	} else if v.FieldValue.IsValid() {
		if s, ok := v.FieldValue.Interface().(string); ok {
			value, isString = s, true
		}
	}
	if !isString {
		return v.Proto.GetMessage()
	}
	if value == "" && (rule == "string.min_len" || rule == "string.pattern") {
		return "must not be empty"
	}
	if rule == "string.max_len" && v.RuleValue.IsValid() {
		return fmt.Sprintf("%s is %d characters, more than %d", quote(value), utf8.RuneCountInString(value), v.RuleValue.Uint())
	}
	if sh := shape(v); sh != "" {
		return quote(value) + " must be " + sh
	}
	if rule == "string.pattern" {
		return quote(value) + " is not in the form this field takes"
	}
	return quote(value) + " " + strings.TrimPrefix(v.Proto.GetMessage(), "value ")
}

// quote quotes what a caller sent, shortened: an error need not repeat a
// long value whole.
func quote(s string) string {
	const max = 64
	if utf8.RuneCountInString(s) > max {
		r := []rune(s)
		return strconv.Quote(string(r[:max])) + "..."
	}
	return strconv.Quote(s)
}

// checkMessage refuses the commit message of a write (PutRequest and
// DeleteRequest) that the sources would refuse: control characters, and
// the trailers only cupd writes (source.CheckMessage).
func checkMessage(msg any) error {
	w, ok := msg.(interface{ GetMessage() string })
	if !ok {
		return nil
	}
	if err := source.CheckMessage(w.GetMessage()); err != nil {
		why := strings.TrimPrefix(err.Error(), source.ErrInvalidMessage.Error()+": ")
		return fieldError("message", "%s", why)
	}
	return nil
}
