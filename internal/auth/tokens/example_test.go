package tokens_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/cup-dev/cup/internal/auth/tokens"
)

func ExampleLoad() {
	dir, err := os.MkdirTemp("", "tokens")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	// The file lists the SHA-256 of each token, never the token.
	sum := sha256.Sum256([]byte("s3cr3t"))
	path := filepath.Join(dir, "tokens.yaml")
	content := "tokens:\n- sha256: " + hex.EncodeToString(sum[:]) + "\n  user: alice\n  groups: [flag-admins]\n"
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		panic(err)
	}

	f, err := tokens.Load(path)
	if err != nil {
		panic(err)
	}
	r := httptest.NewRequest("GET", "/apis/flipt.io/v1alpha1/namespaces/default/flags", nil)
	r.Header.Set("Authorization", "Bearer s3cr3t")
	id, err := f.Authenticate(r)
	if err != nil {
		panic(err)
	}
	fmt.Println(id.User, id.Groups, id.Method)
	// Output: alice [flag-admins] token
}
