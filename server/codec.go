package server

import (
	"errors"
	"fmt"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// strictJSON is Connect's JSON codec, but refusing what it does not know:
// connect-go's own discards unknown fields, so that a misspelt "dryrun"
// would be dropped and the write it should have stopped committed. A
// request is what the caller meant or an InvalidArgument naming the field.
// Answers are encoded as connect-go's codec encodes them.
type strictJSON struct{ name string }

// jsonCodecs are the codecs that replace connect-go's JSON ones, under
// both names its handlers look JSON up by.
func jsonCodecs() []connect.HandlerOption {
	return []connect.HandlerOption{
		connect.WithCodec(strictJSON{"json"}),
		connect.WithCodec(strictJSON{"json; charset=utf-8"}),
	}
}

var _ connect.Codec = strictJSON{}

func (c strictJSON) Name() string { return c.name }

func (strictJSON) Marshal(msg any) ([]byte, error) {
	m, ok := msg.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("%T is not a protobuf message", msg)
	}
	return protojson.Marshal(m)
}

func (strictJSON) Unmarshal(b []byte, msg any) error {
	m, ok := msg.(proto.Message)
	if !ok {
		return fmt.Errorf("%T is not a protobuf message", msg)
	}
	if len(b) == 0 {
		return errors.New("zero-length payload is not a valid JSON object")
	}
	if err := protojson.Unmarshal(b, m); err != nil {
		// protojson says "proto: (line 1:38): unknown field "dryrun"":
		// the caller wrote JSON, not proto, so it is named as JSON.
		return fmt.Errorf("request body: %s", jsonReason(err))
	}
	return nil
}

// jsonReason is a protojson error without its "proto:" prefix (which
// protojson follows with a space or, at random, a no-break space).
func jsonReason(err error) string {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "proto:"); ok {
		msg = strings.TrimLeft(rest, " \u00a0")
	}
	return msg
}

// unknownField finds a field of m that the server's proto does not have:
// the path of the message holding it and its field number. The binary
// protocols keep such fields instead of refusing them; a request holding
// one was written against a newer proto, and what it asks cannot be done
// here.
func unknownField(m protoreflect.Message, path string) (where string, number protowire.Number, found bool) {
	if u := m.GetUnknown(); len(u) > 0 {
		n, _, _ := protowire.ConsumeTag(u)
		if path == "" {
			path = "request"
		}
		return path, n, true
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		p := string(fd.Name())
		if path != "" {
			p = path + "." + p
		}
		switch {
		case fd.IsMap():
			if fd.MapValue().Message() != nil {
				v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
					where, number, found = unknownField(mv.Message(), fmt.Sprintf("%s[%q]", p, k.String()))
					return !found
				})
			}
		case fd.IsList():
			if fd.Message() != nil {
				for i := 0; i < v.List().Len() && !found; i++ {
					where, number, found = unknownField(v.List().Get(i).Message(), fmt.Sprintf("%s[%d]", p, i))
				}
			}
		case fd.Message() != nil:
			where, number, found = unknownField(v.Message(), p)
		}
		return !found
	})
	return where, number, found
}

// refuseUnknown is InvalidArgument for a request holding a field the
// server's proto does not have, or nil.
func refuseUnknown(msg any) error {
	m, ok := msg.(proto.Message)
	if !ok {
		return nil
	}
	if where, n, found := unknownField(m.ProtoReflect(), ""); found {
		return fieldError(where, "holds field number %d, which this cupd does not know: it may be older than the client's API", n)
	}
	return nil
}
