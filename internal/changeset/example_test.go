package changeset_test

import (
	"fmt"

	"github.com/cup-dev/cup/internal/changeset"
	"github.com/cup-dev/cup/source"
)

func ExampleMessage() {
	msg := changeset.Message("Scale app to 3 replicas\n", changeset.Trailers{IdempotencyKey: "order-42", Fingerprint: "sha256:9f86d08"})
	fmt.Print(msg)
	key, _ := changeset.Trailer(msg, source.TrailerIdempotencyKey)
	fmt.Println("key:", key)
	// Output:
	// Scale app to 3 replicas
	//
	// Cup-Idempotency-Key: order-42
	// Cup-Request: sha256:9f86d08
	// key: order-42
}

func ExampleBranchName() {
	// An update with a key always names the same branch.
	fmt.Println(changeset.BranchName(source.DefaultBranchPrefix, "order-42"))
	fmt.Println(changeset.BranchName(source.DefaultBranchPrefix, "order-42"))
	// Output:
	// cup/3bf8b157c4238eef
	// cup/3bf8b157c4238eef
}
