package authtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A CA is a certificate authority that lives in memory.
type CA struct {
	// Cert is the CA's self-signed certificate.
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// NewCA makes a certificate authority whose common name is name, valid from
// an hour ago for a day.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &CA{Cert: cert, key: key}
}

// PEM returns the CA's certificate as PEM.
func (ca *CA) PEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw})
}

// Pool returns a new pool that holds the CA's certificate only.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// WriteFile writes the CA's certificate, as PEM, to path and returns path.
func (ca *CA) WriteFile(t testing.TB, path string) string {
	t.Helper()
	writeFile(t, path, ca.PEM())
	return path
}

// Issue signs a certificate made from tmpl, for a new P-256 key. It fills
// in what tmpl leaves zero: the serial number (a random one), the validity
// (from an hour ago for a day) and the key usage (digital signature). A
// certificate for server authentication that names no host is for
// 127.0.0.1, ::1 and localhost.
func (ca *CA) Issue(t testing.TB, tmpl x509.Certificate) *KeyPair {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if tmpl.SerialNumber == nil {
		if tmpl.SerialNumber, err = rand.Int(rand.Reader, big.NewInt(1<<62)); err != nil {
			t.Fatal(err)
		}
	}
	if tmpl.NotBefore.IsZero() && tmpl.NotAfter.IsZero() {
		now := time.Now()
		tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Hour), now.Add(24*time.Hour)
	}
	if tmpl.KeyUsage == 0 {
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	}
	for _, u := range tmpl.ExtKeyUsage {
		if u == x509.ExtKeyUsageServerAuth && len(tmpl.IPAddresses) == 0 && len(tmpl.DNSNames) == 0 {
			tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
			tmpl.DNSNames = []string{"localhost"}
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, &tmpl, ca.Cert, key.Public(), ca.key)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	p := &KeyPair{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}),
	}
	if p.Certificate, err = tls.X509KeyPair(p.CertPEM, p.KeyPEM); err != nil {
		t.Fatal(err)
	}
	return p
}

// Server issues a certificate for server authentication on 127.0.0.1, ::1
// and localhost, whose common name is name.
func (ca *CA) Server(t testing.TB, name string) *KeyPair {
	t.Helper()
	return ca.Issue(t, x509.Certificate{
		Subject:     pkix.Name{CommonName: name},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
}

// Client issues a certificate for client authentication of subject: its
// common name is the user, its organizations the groups.
func (ca *CA) Client(t testing.TB, subject pkix.Name) *KeyPair {
	t.Helper()
	return ca.Issue(t, x509.Certificate{
		Subject:     subject,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
}

// A KeyPair is a certificate a [CA] issued and its private key.
type KeyPair struct {
	// CertPEM is the certificate and KeyPEM its key (PKCS #8), as PEM.
	CertPEM, KeyPEM []byte
	// Certificate is the pair parsed, with its Leaf set.
	Certificate tls.Certificate
}

// WriteFiles writes the certificate and its key into dir as name.pem and
// name-key.pem, and returns their paths.
func (p *KeyPair) WriteFiles(t testing.TB, dir, name string) (certFile, keyFile string) {
	t.Helper()
	certFile, keyFile = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	writeFile(t, certFile, p.CertPEM)
	writeFile(t, keyFile, p.KeyPEM)
	return certFile, keyFile
}

// A PKI is a certificate authority and a server certificate it issued, for
// 127.0.0.1, ::1 and localhost, written as PEM files into Dir.
type PKI struct {
	// CA is the certificate authority.
	CA *CA
	// Server is the server's certificate and key.
	Server *KeyPair
	// Dir is the directory of the files, a temporary directory of the test.
	Dir string
	// CAFile is the CA's certificate, Dir/ca.pem.
	CAFile string
	// CertFile and KeyFile are the server's certificate and key,
	// Dir/server.pem and Dir/server-key.pem.
	CertFile, KeyFile string
}

// NewPKI makes a certificate authority, "cup test CA", and a server
// certificate, "cupd", and writes them into a new temporary directory.
func NewPKI(t testing.TB) *PKI {
	t.Helper()
	p := &PKI{CA: NewCA(t, "cup test CA"), Dir: t.TempDir()}
	p.CAFile = p.CA.WriteFile(t, filepath.Join(p.Dir, "ca.pem"))
	p.Server = p.CA.Server(t, "cupd")
	p.CertFile, p.KeyFile = p.Server.WriteFiles(t, p.Dir, "server")
	return p
}

func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
