package server

import (
	"errors"

	"buf.build/go/protovalidate"
	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
)

// validate checks msg against the protovalidate rules in the proto. A
// violation is InvalidArgument naming each offending field.
func (s *Server) validate(msg any) error {
	m, ok := msg.(proto.Message)
	if !ok {
		return nil
	}
	err := s.validator.Validate(m)
	if err == nil {
		return nil
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
