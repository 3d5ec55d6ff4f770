package app

import (
	"context"
	"net/http"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/emptypb"
)

// TrivialProcedure is the Connect procedure Options.BenchTrivial serves:
// it takes and returns google.protobuf.Empty and does nothing else.
const TrivialProcedure = "/cup.bench.v1.TrivialService/Noop"

// withTrivial serves TrivialProcedure beside h, with connect-go's default
// options: no interceptor, no authentication, no request timeout or body
// accounting. What separates it from an API call is then the API's own
// work, which cupbench measures as the ratio of their throughputs.
func withTrivial(h http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", h)
	mux.Handle(TrivialProcedure, connect.NewUnaryHandler(TrivialProcedure,
		func(context.Context, *connect.Request[emptypb.Empty]) (*connect.Response[emptypb.Empty], error) {
			return connect.NewResponse(&emptypb.Empty{}), nil
		}))
	return mux
}
