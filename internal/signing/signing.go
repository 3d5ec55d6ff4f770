// Package signing signs commits with OpenPGP keys, as git commit -S does.
package signing

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"

	"github.com/cup-dev/cup/source"
)

// OpenPGP signs with one private key. It is safe for concurrent use.
type OpenPGP struct {
	entity *openpgp.Entity
}

var _ source.Signer = (*OpenPGP)(nil)

// NewOpenPGP reads an ASCII-armored private key (gpg --armor
// --export-secret-keys), decrypting it with passphrase when it is
// encrypted. The key must be able to sign.
func NewOpenPGP(armoredKey, passphrase []byte) (*OpenPGP, error) {
	keys, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(armoredKey))
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	if len(keys) != 1 {
		return nil, fmt.Errorf("signing key: want one key, the file holds %d", len(keys))
	}
	e := keys[0]
	if e.PrivateKey == nil {
		return nil, errors.New("signing key: the file holds a public key only; export the secret key")
	}
	if e.PrivateKey.Encrypted {
		if len(passphrase) == 0 {
			return nil, errors.New("signing key: the key is encrypted and no passphrase was given")
		}
		if err := e.DecryptPrivateKeys(passphrase); err != nil {
			return nil, fmt.Errorf("signing key: wrong passphrase: %w", err)
		}
	}
	if _, ok := e.SigningKey(time.Now()); !ok {
		return nil, errors.New("signing key: the key cannot sign (expired, revoked, or without a signing subkey)")
	}
	return &OpenPGP{entity: e}, nil
}

// Sign returns an armored detached signature of payload.
func (s *OpenPGP) Sign(payload []byte) ([]byte, error) {
	var b bytes.Buffer
	if err := openpgp.ArmoredDetachSign(&b, s.entity, bytes.NewReader(payload), &packet.Config{}); err != nil {
		return nil, err
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}

// Fingerprint is the key's fingerprint, for logs.
func (s *OpenPGP) Fingerprint() string {
	return fmt.Sprintf("%X", s.entity.PrimaryKey.Fingerprint)
}

// PublicKey returns the armored public key, for verifying.
func (s *OpenPGP) PublicKey() ([]byte, error) {
	var b bytes.Buffer
	w, err := armor.Encode(&b, openpgp.PublicKeyType, nil)
	if err != nil {
		return nil, err
	}
	if err := s.entity.Serialize(w); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
