package main

import (
	"fmt"
	"os"
	"path/filepath"
)

// settings is how one invocation reaches the server.
type settings struct {
	server, namespace, protocol string
	// token is sent as it is; otherwise, when tokenFile is set, the file's
	// content is read before every call. Never both.
	token, tokenFile string
	tls              tlsSettings
}

// tlsSettings say how to talk TLS to an https:// server. File paths are
// absolute or relative to the working directory.
type tlsSettings struct {
	// certificateAuthority is a PEM bundle of the only CAs trusted to sign
	// the server's certificate; empty trusts the system's roots.
	certificateAuthority string
	// clientCertificate and clientKey are PEM files of the certificate
	// offered to a server that asks for one; both or neither.
	clientCertificate, clientKey string
	// insecureSkipTLSVerify accepts any server certificate. Never with
	// certificateAuthority.
	insecureSkipTLSVerify bool
}

// layer is one place settings come from: the flags, the environment or a
// context. A layer that sets either field of a pair (token and token file;
// certificate authority and insecure-skip-tls-verify; client certificate
// and key) hides both fields of the layers beneath it.
type layer struct {
	token, tokenFile string
	tls              tlsSettings
	names            layerNames
}

// layerNames are what a layer calls its fields, for error messages.
type layerNames struct {
	where                                     string // prefixed to the names
	certificateAuthority, insecure, cert, key string
}

var (
	flagNames    = layerNames{"", "--certificate-authority", "--insecure-skip-tls-verify", "--client-certificate", "--client-key"}
	envNames     = layerNames{"", "CUP_CERTIFICATE_AUTHORITY", "", "CUP_CLIENT_CERTIFICATE", "CUP_CLIENT_KEY"}
	contextNames = layerNames{"", "certificateAuthority", "insecureSkipTLSVerify", "clientCertificate", "clientKey"}
)

// settings resolves the effective settings from the flags, the environment,
// the configuration file's context and the defaults, in that order.
func (c *cli) settings() (settings, error) {
	cfg, cfgPath, err := loadConfig()
	if err != nil {
		return settings{}, err
	}
	name := firstNonEmpty(c.context, os.Getenv("CUP_CONTEXT"), cfg.CurrentContext)
	var ctx configContext
	if name != "" {
		p := cfg.find(name)
		if p == nil {
			return settings{}, fmt.Errorf("context %q is not in the configuration (see cup config view)", name)
		}
		ctx = *p
	}
	s := settings{
		server:    firstNonEmpty(c.server, os.Getenv("CUP_SERVER"), ctx.Server, "http://127.0.0.1:8181"),
		namespace: firstNonEmpty(c.namespace, os.Getenv("CUP_NAMESPACE"), ctx.Namespace, "default"),
		protocol:  firstNonEmpty(c.protocol, ctx.Protocol, "connect"),
	}
	if s.protocol != "connect" && s.protocol != "grpc" {
		return settings{}, fmt.Errorf("--protocol: %q is neither connect nor grpc", s.protocol)
	}

	// Paths in the configuration file are relative to its directory.
	dir := filepath.Dir(cfgPath)
	rel := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	ctxNames := contextNames
	ctxNames.where = fmt.Sprintf("context %q: ", name)
	layers := []layer{
		{token: c.token, tokenFile: c.tokenFile, tls: c.tls, names: flagNames},
		{
			token: os.Getenv("CUP_TOKEN"), tokenFile: os.Getenv("CUP_TOKEN_FILE"),
			tls: tlsSettings{
				certificateAuthority: os.Getenv("CUP_CERTIFICATE_AUTHORITY"),
				clientCertificate:    os.Getenv("CUP_CLIENT_CERTIFICATE"),
				clientKey:            os.Getenv("CUP_CLIENT_KEY"),
			},
			names: envNames,
		},
		{
			token: ctx.Token, tokenFile: rel(ctx.TokenFile),
			tls: tlsSettings{
				certificateAuthority:  rel(ctx.CertificateAuthority),
				clientCertificate:     rel(ctx.ClientCertificate),
				clientKey:             rel(ctx.ClientKey),
				insecureSkipTLSVerify: ctx.InsecureSkipTLSVerify,
			},
			names: ctxNames,
		},
	}
	for _, l := range layers {
		if l.token != "" {
			s.token = l.token
			break
		}
		if l.tokenFile != "" {
			s.tokenFile = l.tokenFile
			break
		}
	}
	for _, l := range layers {
		if l.tls.certificateAuthority == "" && !l.tls.insecureSkipTLSVerify {
			continue
		}
		if l.tls.certificateAuthority != "" && l.tls.insecureSkipTLSVerify {
			n := l.names
			return settings{}, fmt.Errorf("%s%s and %s do not go together: trust a certificate authority or skip verification", n.where, n.certificateAuthority, n.insecure)
		}
		s.tls.certificateAuthority, s.tls.insecureSkipTLSVerify = l.tls.certificateAuthority, l.tls.insecureSkipTLSVerify
		break
	}
	for _, l := range layers {
		if l.tls.clientCertificate == "" && l.tls.clientKey == "" {
			continue
		}
		if err := checkClientPair(l.names, l.tls.clientCertificate, l.tls.clientKey); err != nil {
			return settings{}, err
		}
		s.tls.clientCertificate, s.tls.clientKey = l.tls.clientCertificate, l.tls.clientKey
		break
	}
	return s, nil
}

// checkClientPair fails when only one of a client certificate and its key is set.
func checkClientPair(n layerNames, cert, key string) error {
	switch {
	case cert != "" && key == "":
		return fmt.Errorf("%s%s needs %s, the certificate's private key", n.where, n.cert, n.key)
	case cert == "" && key != "":
		return fmt.Errorf("%s%s needs %s, the certificate it is the key of", n.where, n.key, n.cert)
	}
	return nil
}
