package signing_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/cup-dev/cup/internal/gitrepo"
	"github.com/cup-dev/cup/internal/signing"
	"github.com/cup-dev/cup/source"
	"github.com/cup-dev/cup/source/local"
)

// newKey returns an armored private key, encrypted with passphrase when
// it is not empty.
func newKey(t *testing.T, passphrase string) []byte {
	t.Helper()
	e, err := openpgp.NewEntity("cup", "test", "cup@example.com", nil)
	if err != nil {
		t.Fatal(err)
	}
	if passphrase != "" {
		if err := e.EncryptPrivateKeys([]byte(passphrase), nil); err != nil {
			t.Fatal(err)
		}
	}
	var b bytes.Buffer
	w, err := armor.Encode(&b, openpgp.PrivateKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.SerializePrivateWithoutSigning(w, nil); err != nil {
		t.Fatal(err)
	}
	w.Close()
	return b.Bytes()
}

// TestSignedCommitsVerify writes through a local source with a signer and
// checks the commit's signature with go-git, as git verify-commit would.
func TestSignedCommitsVerify(t *testing.T) {
	t.Parallel()
	signer, err := signing.NewOpenPGP(newKey(t, "pass"), []byte("pass"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := gitrepo.Init(dir, "main", map[string][]byte{"a.yaml": []byte("a: 1\n")}, "initial\n"); err != nil {
		t.Fatal(err)
	}
	src, err := local.Open(dir, local.WithSigner(signer))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	res, err := src.Update(t.Context(), &source.UpdateRequest{Message: "signed\n", Apply: func(_ context.Context, _ *source.Snapshot, w source.Writer) error {
		return w.WriteFile("a.yaml", []byte("a: 2\n"), 0o644)
	}})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := gogit.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	c, err := repo.CommitObject(plumbing.NewHash(res.Commit))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(c.PGPSignature, "-----BEGIN PGP SIGNATURE-----") || c.Message != "signed\n" {
		t.Fatalf("commit signature %q, message %q", c.PGPSignature, c.Message)
	}
	pub, err := signer.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Verify(string(pub)); err != nil {
		t.Fatalf("signature does not verify: %v", err)
	}
	other, err := signing.NewOpenPGP(newKey(t, ""), nil)
	if err != nil {
		t.Fatal(err)
	}
	otherPub, _ := other.PublicKey()
	if _, err := c.Verify(string(otherPub)); err == nil {
		t.Error("the signature verifies with another key")
	}
}

func TestBadKeys(t *testing.T) {
	t.Parallel()
	key := newKey(t, "pass")
	for _, tc := range []struct {
		name       string
		key        []byte
		passphrase string
		want       string
	}{
		{"garbage", []byte("not a key"), "", "signing key"},
		{"no passphrase", key, "", "encrypted"},
		{"wrong passphrase", key, "nope", "passphrase"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := signing.NewOpenPGP(tc.key, []byte(tc.passphrase))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}
