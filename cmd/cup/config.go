package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

// config is the configuration file: named contexts and the current one.
type config struct {
	CurrentContext string          `json:"currentContext,omitempty"`
	Contexts       []configContext `json:"contexts,omitempty"`
}

// configContext is one named server with its namespace, credentials, TLS
// settings and protocol. Relative file paths are relative to the
// configuration file's directory.
type configContext struct {
	Name      string `json:"name"`
	Server    string `json:"server,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Token     string `json:"token,omitempty"`
	// TokenFile holds the token, read before every call; Token wins.
	TokenFile string `json:"tokenFile,omitempty"`
	// CertificateAuthority is a PEM file of the CAs trusted (instead of the
	// system's) to sign the server's certificate.
	CertificateAuthority string `json:"certificateAuthority,omitempty"`
	// ClientCertificate and ClientKey are PEM files of a client certificate.
	ClientCertificate string `json:"clientCertificate,omitempty"`
	ClientKey         string `json:"clientKey,omitempty"`
	// InsecureSkipTLSVerify accepts any server certificate.
	InsecureSkipTLSVerify bool   `json:"insecureSkipTLSVerify,omitempty"`
	Protocol              string `json:"protocol,omitempty"`
}

// completeContexts completes the names of the configuration's contexts.
func completeContexts(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	cfg, _, err := loadConfig()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	var names []string
	for _, x := range cfg.Contexts {
		names = append(names, x.Name)
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// credentials says what the context authenticates with, never the secret.
func (x *configContext) credentials() string {
	var kinds []string
	switch {
	case x.Token != "":
		kinds = append(kinds, "token")
	case x.TokenFile != "":
		kinds = append(kinds, "token-file")
	}
	if x.ClientCertificate != "" {
		kinds = append(kinds, "client-certificate")
	}
	if len(kinds) == 0 {
		return "none"
	}
	return strings.Join(kinds, ",")
}

func (c *config) find(name string) *configContext {
	for i := range c.Contexts {
		if c.Contexts[i].Name == name {
			return &c.Contexts[i]
		}
	}
	return nil
}

// configPath is $CUP_CONFIG, or cup/config.yaml in the user configuration directory.
func configPath() (string, error) {
	if p := os.Getenv("CUP_CONFIG"); p != "" {
		return p, nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("finding the configuration file (set CUP_CONFIG): %w", err)
	}
	return filepath.Join(dir, "cup", "config.yaml"), nil
}

// loadConfig reads the configuration file; a missing file is an empty configuration.
func loadConfig() (*config, string, error) {
	p, err := configPath()
	if err != nil {
		return nil, "", err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return &config{}, p, nil
	}
	if err != nil {
		return nil, "", err
	}
	var cfg config
	if err := yaml.UnmarshalStrict(b, &cfg); err != nil {
		return nil, "", fmt.Errorf("%s: %w", p, err)
	}
	return &cfg, p, nil
}

func saveConfig(cfg *config, p string) error {
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	return os.WriteFile(p, b, 0o600)
}

func (c *cli) newConfigCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "View and change the contexts of the configuration file",
		Long: `View and change the contexts of the configuration file, a YAML file at
$CUP_CONFIG or cup/config.yaml in the user configuration directory (mode 0600).

A context names a server with its namespace, credentials (token or
tokenFile), TLS settings (certificateAuthority, clientCertificate and
clientKey, insecureSkipTLSVerify) and protocol. Relative file paths in the
file are relative to its directory. The global flags of the same names and
the environment (CUP_SERVER, CUP_NAMESPACE, CUP_TOKEN, CUP_TOKEN_FILE,
CUP_CERTIFICATE_AUTHORITY, CUP_CLIENT_CERTIFICATE, CUP_CLIENT_KEY,
CUP_CONTEXT) override the context.`,
	}
	var raw bool
	view := &cobra.Command{
		Use:   "view",
		Short: "Print the configuration (tokens redacted unless --raw)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, _, err := loadConfig()
			if err != nil {
				return err
			}
			if !raw {
				for i := range cfg.Contexts {
					if cfg.Contexts[i].Token != "" {
						cfg.Contexts[i].Token = "REDACTED"
					}
				}
			}
			b, err := yaml.Marshal(cfg)
			if err != nil {
				return err
			}
			_, err = c.stdout.Write(b)
			return err
		},
	}
	view.Flags().BoolVar(&raw, "raw", false, "print tokens")
	current := &cobra.Command{
		Use:   "current-context",
		Short: "Print the current context's name",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, _, err := loadConfig()
			if err != nil {
				return err
			}
			if cfg.CurrentContext == "" {
				return errors.New("no current context is set (see cup config use-context)")
			}
			_, err = fmt.Fprintln(c.stdout, cfg.CurrentContext)
			return err
		},
	}
	var getOutput string
	get := &cobra.Command{
		Use:   "get-contexts [NAME...]",
		Short: "List the contexts (-o name for their names only)",
		Long: `List the contexts of the configuration file, or those named: the current
one marked with *, each with its server, namespace and kind of credentials.
A name that is not in the file fails.`,
		ValidArgsFunction: completeContexts,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, _, err := loadConfig()
			if err != nil {
				return err
			}
			if getOutput != "" && getOutput != "name" {
				return fmt.Errorf("--output %q: the contexts are printed as a table, or with -o name as names", getOutput)
			}
			shown := cfg.Contexts
			if len(args) > 0 {
				shown = nil
				for _, name := range args {
					x := cfg.find(name)
					if x == nil {
						return fmt.Errorf("context %q is not in the configuration (see cup config set-context)", name)
					}
					shown = append(shown, *x)
				}
			}
			if getOutput == "name" {
				for _, x := range shown {
					if _, err := fmt.Fprintln(c.stdout, x.Name); err != nil {
						return err
					}
				}
				return nil
			}
			rows := [][]string{{"CURRENT", "NAME", "SERVER", "NAMESPACE", "CREDENTIALS"}}
			for _, x := range shown {
				current := ""
				if x.Name == cfg.CurrentContext {
					current = "*"
				}
				rows = append(rows, []string{current, x.Name, x.Server, x.Namespace, x.credentials()})
			}
			return (&rowPrinter{w: c.stdout}).print(rows...)
		},
	}
	get.Flags().StringVarP(&getOutput, "output", "o", "", "name: print the names only")
	use := &cobra.Command{
		Use:               "use-context NAME",
		Short:             "Make NAME the current context",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeContexts,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, p, err := loadConfig()
			if err != nil {
				return err
			}
			if cfg.find(args[0]) == nil {
				return fmt.Errorf("context %q is not in the configuration (see cup config set-context)", args[0])
			}
			cfg.CurrentContext = args[0]
			if err := saveConfig(cfg, p); err != nil {
				return err
			}
			_, err = fmt.Fprintf(c.stdout, "Switched to context %q.\n", args[0])
			return err
		},
	}
	set := &cobra.Command{
		Use:   "set-context NAME [--server URL] [--namespace NS] [--token TOKEN | --token-file FILE] [--certificate-authority FILE] [--client-certificate FILE --client-key FILE] [--protocol connect|grpc]",
		Short: "Create or change a context",
		Long: `Create the context NAME, or change the fields of it that the global flags
--server, --namespace, --token, --token-file, --certificate-authority,
--client-certificate, --client-key, --insecure-skip-tls-verify and
--protocol name; an empty value removes a field. File paths are stored
absolute and the files are read when the context is used.

Setting --token alone removes the context's token file, and --token-file
alone its token; --certificate-authority alone turns
insecure-skip-tls-verify off, and --insecure-skip-tls-verify alone removes
the certificate authority. The first context made becomes the current one.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, p, err := loadConfig()
			if err != nil {
				return err
			}
			x := cfg.find(args[0])
			verb := "Modified"
			if x == nil {
				cfg.Contexts = append(cfg.Contexts, configContext{Name: args[0]})
				x = &cfg.Contexts[len(cfg.Contexts)-1]
				verb = "Created"
			}
			f := cmd.Flags()
			if f.Changed("server") {
				x.Server = c.server
			}
			if f.Changed("namespace") {
				x.Namespace = c.namespace
			}
			if f.Changed("token") {
				x.Token = c.token
			}
			files := []struct {
				flag, value string
				field       *string
			}{
				{"token-file", c.tokenFile, &x.TokenFile},
				{"certificate-authority", c.tls.certificateAuthority, &x.CertificateAuthority},
				{"client-certificate", c.tls.clientCertificate, &x.ClientCertificate},
				{"client-key", c.tls.clientKey, &x.ClientKey},
			}
			for _, file := range files {
				if !f.Changed(file.flag) {
					continue
				}
				*file.field = file.value
				if file.value != "" {
					if *file.field, err = filepath.Abs(file.value); err != nil {
						return fmt.Errorf("--%s: %w", file.flag, err)
					}
				}
			}
			if f.Changed("insecure-skip-tls-verify") {
				x.InsecureSkipTLSVerify = c.tls.insecureSkipTLSVerify
			}
			// One field of a pair, set on its own, replaces the other.
			switch {
			case c.token != "" && !f.Changed("token-file"):
				x.TokenFile = ""
			case c.tokenFile != "" && !f.Changed("token"):
				x.Token = ""
			}
			switch {
			case c.tls.certificateAuthority != "" && !f.Changed("insecure-skip-tls-verify"):
				x.InsecureSkipTLSVerify = false
			case c.tls.insecureSkipTLSVerify && !f.Changed("certificate-authority"):
				x.CertificateAuthority = ""
			}
			if x.CertificateAuthority != "" && x.InsecureSkipTLSVerify {
				return errors.New("--certificate-authority and --insecure-skip-tls-verify do not go together: trust a certificate authority or skip verification")
			}
			if err := checkClientPair(flagNames, x.ClientCertificate, x.ClientKey); err != nil {
				return err
			}
			if f.Changed("protocol") {
				if c.protocol != "connect" && c.protocol != "grpc" {
					return fmt.Errorf("--protocol: %q is neither connect nor grpc", c.protocol)
				}
				x.Protocol = c.protocol
			}
			if cfg.CurrentContext == "" {
				cfg.CurrentContext = args[0]
			}
			if err := saveConfig(cfg, p); err != nil {
				return err
			}
			_, err = fmt.Fprintf(c.stdout, "%s context %q.\n", verb, args[0])
			return err
		},
	}
	cmd.AddCommand(view, current, get, use, set)
	refuseUnknownSubcommands(cmd)
	return cmd
}
