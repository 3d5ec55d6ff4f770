package server

import (
	"errors"
	"fmt"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
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
