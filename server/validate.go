package server

import (
	"errors"
	"strings"

	"buf.build/go/protovalidate"
	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"github.com/cup-dev/cup/source"
)

// validate checks msg against the protovalidate rules in the proto, and
// the commit message of a write against source.CheckMessage. A violation
// is InvalidArgument naming each offending field.
func (s *Server) validate(msg any) error {
	m, ok := msg.(proto.Message)
	if !ok {
		return nil
	}
	err := s.validator.Validate(m)
	if err == nil {
		return checkMessage(msg)
	}
	var ve *protovalidate.ValidationError
	if !errors.As(err, &ve) {
		return connect.NewError(connect.CodeInternal, err)
	}
	vs := make([]FieldViolation, 0, len(ve.Violations))
	for _, v := range ve.Violations {
		field := protovalidate.FieldPathString(v.Proto.GetField())
		if field == "" {
			field = "request"
		}
		vs = append(vs, FieldViolation{Field: field, Description: v.Proto.GetMessage()})
	}
	return invalidArgument(vs...)
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
