package certs

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// TLSConfig says how the server serves TLS.
type TLSConfig struct {
	// CertFile and KeyFile are the PEM files of the server's certificate
	// (followed by any intermediate certificates) and private key.
	// Required. They are read again when they change (see ServerTLS).
	CertFile, KeyFile string
	// ClientCAFile is a PEM file of the certificate authorities whose
	// client certificates the server accepts, for [ClientCertificates].
	// Optional: without it the server asks for no client certificate. It
	// is read once; changing it takes a restart.
	ClientCAFile string
	// RequireClientCert refuses connections without a valid client
	// certificate, in the TLS handshake. It needs ClientCAFile. By default
	// a client certificate is verified if the client sends one, and a
	// client without one may authenticate otherwise (a bearer token).
	RequireClientCert bool
	// Logger receives a line whenever the certificate files changed: at
	// level Info when the new pair was loaded, at level Warn (with the
	// error) when it could not be and the previous pair stays in use. Nil
	// logs nothing.
	Logger *slog.Logger
}

// certCheckInterval is the least time between two looks at whether the
// certificate files changed.
const certCheckInterval = time.Second

// ServerTLS returns the TLS configuration for serving with cfg. It reads
// the files now, so that a mistake shows at startup.
//
// The server's certificate and key are read again when either file's
// modification time, size or inode changes (looked at on a handshake, at
// most once a second), so a renewed certificate is served without a
// restart; if the new pair cannot be loaded (say the certificate was
// written and the key not yet), the previous pair stays in use until the
// files change again, and cfg.Logger is told.
//
// The configuration requires TLS 1.2 or later and offers HTTP/2 ("h2") and
// HTTP/1.1 by ALPN, which gRPC clients need.
func ServerTLS(cfg TLSConfig) (*tls.Config, error) {
	if cfg.CertFile == "" || cfg.KeyFile == "" {
		return nil, errors.New("tls: both a certificate file and a key file are required")
	}
	if cfg.RequireClientCert && cfg.ClientCAFile == "" {
		return nil, errors.New("tls: requiring client certificates needs a client CA file to verify them")
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	kp := &keyPair{certFile: cfg.CertFile, keyFile: cfg.KeyFile, logger: logger}
	if err := kp.load(); err != nil {
		return nil, err
	}
	kp.checked = time.Now()
	c := &tls.Config{
		MinVersion:     tls.VersionTLS12,
		NextProtos:     []string{"h2", "http/1.1"},
		GetCertificate: kp.get,
		ClientAuth:     tls.NoClientCert,
	}
	if cfg.ClientCAFile != "" {
		data, err := os.ReadFile(cfg.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("tls: client CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(data) {
			return nil, fmt.Errorf("tls: client CA file %s holds no PEM certificates", cfg.ClientCAFile)
		}
		c.ClientCAs = pool
		c.ClientAuth = tls.VerifyClientCertIfGiven
		if cfg.RequireClientCert {
			c.ClientAuth = tls.RequireAndVerifyClientCert
		}
	}
	return c, nil
}

// keyPair is the server's certificate, reloaded when its files change.
type keyPair struct {
	certFile, keyFile string
	logger            *slog.Logger

	mu       sync.Mutex
	cert     *tls.Certificate
	checked  time.Time
	certStat os.FileInfo // of the files last loaded (or tried)
	keyStat  os.FileInfo
}

// load reads the pair, keeping the current one if that fails.
func (kp *keyPair) load() error {
	certStat, err := os.Stat(kp.certFile)
	if err != nil {
		return fmt.Errorf("tls: certificate file: %w", err)
	}
	keyStat, err := os.Stat(kp.keyFile)
	if err != nil {
		return fmt.Errorf("tls: key file: %w", err)
	}
	kp.certStat, kp.keyStat = certStat, keyStat
	cert, err := tls.LoadX509KeyPair(kp.certFile, kp.keyFile)
	if err != nil {
		return fmt.Errorf("tls: loading %s and %s: %w", kp.certFile, kp.keyFile, err)
	}
	kp.cert = &cert
	return nil
}

func (kp *keyPair) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	kp.mu.Lock()
	defer kp.mu.Unlock()
	if now := time.Now(); now.Sub(kp.checked) >= certCheckInterval {
		kp.checked = now
		if changed(kp.certStat, kp.certFile) || changed(kp.keyStat, kp.keyFile) {
			// On failure, serve the previous pair until the files change
			// again.
			if err := kp.load(); err != nil {
				kp.logger.Warn("reloading the TLS certificate failed; keeping the previous one", "error", err)
			} else {
				kp.logger.Info("reloaded the TLS certificate", "cert", kp.certFile)
			}
		}
	}
	return kp.cert, nil
}

// changed reports whether the file at path is not the one prev describes.
// A file that cannot be read now (mid-replacement) counts as unchanged.
func changed(prev os.FileInfo, path string) bool {
	st, err := os.Stat(path)
	if err != nil {
		return false
	}
	return !os.SameFile(prev, st) || !prev.ModTime().Equal(st.ModTime()) || prev.Size() != st.Size()
}
