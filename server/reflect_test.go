package server_test

import (
	"slices"
	"testing"

	"connectrpc.com/connect"
	"connectrpc.com/grpcreflect"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// TestReflection asks what grpcurl asks: the services (list) and the file
// describing one of them (describe), over gRPC on h2c.
func TestReflection(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	grpc := protocols[2]
	client := grpcreflect.NewClient(grpc.httpClient(), f.url, connect.WithGRPC())
	stream := client.NewStream(t.Context())
	t.Cleanup(func() { _, _ = stream.Close() })

	names, err := stream.ListServices()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []protoreflect.FullName{"cup.v1alpha1.ResourceService", "cup.v1alpha1.DiscoveryService", "cup.v1alpha1.ProposalService", "grpc.health.v1.Health"} {
		if !slices.Contains(names, want) {
			t.Errorf("services %v lack %s", names, want)
		}
	}
	if _, err := stream.FileContainingSymbol("grpc.health.v1.Health"); err != nil {
		t.Errorf("describe grpc.health.v1.Health: %v", err)
	}
	files, err := stream.FileContainingSymbol("cup.v1alpha1.ResourceService")
	if err != nil {
		t.Fatal(err)
	}
	var methods []string
	for _, fd := range files {
		for _, svc := range fd.GetService() {
			if svc.GetName() == "ResourceService" {
				for _, m := range svc.GetMethod() {
					methods = append(methods, m.GetName())
				}
			}
		}
	}
	if !slices.Equal(methods, []string{"Get", "List", "Put", "Delete", "Apply", "Patch", "Watch", "History", "GetStatus", "Render"}) {
		t.Fatalf("ResourceService methods = %v", methods)
	}
}
