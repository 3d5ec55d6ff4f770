package main

import (
	"context"

	"connectrpc.com/connect"
)

// bearerInterceptor sends a bearer's token on unary calls and on the
// streams cup opens (watches), read before each call or stream.
type bearerInterceptor struct{ b bearer }

func (i bearerInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		token, err := i.b.get()
		if err != nil {
			return nil, err
		}
		req.Header().Set("Authorization", "Bearer "+token)
		return next(ctx, req)
	}
}

func (i bearerInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, spec)
		token, err := i.b.get()
		if err != nil {
			return &failedConn{StreamingClientConn: conn, err: err}
		}
		conn.RequestHeader().Set("Authorization", "Bearer "+token)
		return conn
	}
}

func (i bearerInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

// failedConn is a stream that fails with err before anything is sent: the
// token could not be read.
type failedConn struct {
	connect.StreamingClientConn
	err error
}

func (c *failedConn) Send(any) error    { return c.err }
func (c *failedConn) Receive(any) error { return c.err }
