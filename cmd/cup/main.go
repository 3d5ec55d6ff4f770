// Command cup is the command-line client of cupd: it reads and writes the
// resources a cupd serves, kubectl-style, over Connect or gRPC.
//
// Every command runs in-process from newRootCommand, so tests drive the
// whole tree with buffers against an in-process cupd.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/gen/cup/v1alpha1/cupv1alpha1connect"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes the command line args and returns the process's exit code:
// 0 on success, 1 after printing "error: <message>" to stderr, and a
// "hint: ..." line when cup knows what to do about the error. An
// [exitError] sets another code, and prints nothing when it wraps no error.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return (&cli{stdin: stdin, stdout: stdout, stderr: stderr, now: time.Now}).run(ctx, args)
}

// run runs the command line args with c's input, outputs and clock.
func (c *cli) run(ctx context.Context, args []string) int {
	stderr := c.stderr
	defer c.close()
	cmd := c.newRootCommand()
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	code := 1
	if ee, ok := errors.AsType[*exitError](err); ok {
		code = ee.code
		if ee.err == nil {
			return code
		}
	}
	fmt.Fprintf(stderr, "error: %s\n", errorMessage(err))
	if h := c.hint(err); h != "" {
		fmt.Fprintf(stderr, "hint: %s\n", h)
	}
	return code
}

// exitError makes cup exit with code instead of 1: after printing err as
// any error is printed, or silently when err is nil (as cup diff reports
// differences).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// refuseUnknownSubcommands makes cmd, a command with subcommands, fail on
// an argument that names none of them, listing the ones it has, where
// cobra would print cmd's help and exit 0. Without arguments, a cmd that
// does nothing itself still prints its help.
func refuseUnknownSubcommands(cmd *cobra.Command) {
	cmd.SuggestionsMinimumDistance = 2 // cobra's default, which SuggestionsFor does not apply
	cmd.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		var b strings.Builder
		fmt.Fprintf(&b, "unknown command %q for %q", args[0], cmd.CommandPath())
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			fmt.Fprintf(&b, "; did you mean %s?", strings.Join(s, " or "))
		}
		b.WriteString("\nits commands are:")
		for _, sub := range cmd.Commands() {
			if sub.IsAvailableCommand() {
				fmt.Fprintf(&b, "\n  %-16s %s", sub.Name(), sub.Short)
			}
		}
		return errors.New(b.String())
	}
	if cmd.Run == nil && cmd.RunE == nil {
		cmd.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	}
}

// errorMessage is what the user sees of err: a Connect error's message
// without its code prefix, prefixed with the resource for a call about one
// (resourceError), and any other error as it is.
func errorMessage(err error) string {
	if re, ok := errors.AsType[*resourceError](err); ok {
		return re.Error()
	}
	var ce *connect.Error
	if errors.As(err, &ce) {
		var ne net.Error
		if ce.Code() == connect.CodeUnavailable && errors.As(err, &ne) {
			return "cannot reach the server: " + ce.Message()
		}
		return ce.Message()
	}
	return err.Error()
}

// cli holds the global flags and what one invocation learned from the server.
type cli struct {
	stdin          io.Reader
	stdout, stderr io.Writer

	server, context, namespace, protocol, token, tokenFile string
	tls                                                    tlsSettings
	// now is the clock AGE columns are measured by.
	now func() time.Time

	defs []*cupv1alpha1.ResourceDefinition // cached ListDefinitions
	conn *connection
}

// connection is the resolved endpoint and its clients.
type connection struct {
	namespace string
	// credentials says whether calls carry a token or a client
	// certificate, and clientCert whether a client certificate is offered.
	credentials, clientCert bool
	// certAsked is set when a server asks for a client certificate.
	certAsked *atomic.Bool
	http      *http.Client
	// server is the server's base URL, and token its bearer token, if
	// any, for calls of the REST form.
	server    string
	token     *bearer
	resources cupv1alpha1connect.ResourceServiceClient
	discovery cupv1alpha1connect.DiscoveryServiceClient
	proposals cupv1alpha1connect.ProposalServiceClient
}

func (c *cli) newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "cup",
		Short: "cup reads and writes the resources a cupd serves from Git",
		Long: `cup reads and writes the resources a cupd serves from a Git repository.

The server, namespace, credentials, TLS settings and protocol come from, in
order: the flags; the environment (CUP_SERVER, CUP_NAMESPACE, CUP_TOKEN,
CUP_TOKEN_FILE, CUP_CERTIFICATE_AUTHORITY, CUP_CLIENT_CERTIFICATE,
CUP_CLIENT_KEY, CUP_CONTEXT); the current context of the configuration file
($CUP_CONFIG, or cup/config.yaml in the user configuration directory; see
"cup config"); and the defaults http://127.0.0.1:8181, namespace "default"
and the Connect protocol. The first of these that sets a token or a token
file gives the credentials (a token wins over a token file); likewise for a
certificate authority or --insecure-skip-tls-verify, and for a client
certificate with its key.

An https:// server's certificate is verified against the system's roots,
or against --certificate-authority alone when it is given.`,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetIn(c.stdin)
	root.SetOut(c.stdout)
	root.SetErr(c.stderr)
	pf := root.PersistentFlags()
	pf.StringVar(&c.server, "server", "", "cupd's URL (default from the context, CUP_SERVER or http://127.0.0.1:8181)")
	pf.StringVar(&c.context, "context", "", "the configuration context to use (default CUP_CONTEXT or the current context)")
	pf.StringVarP(&c.namespace, "namespace", "n", "", `the namespace (default from the context, CUP_NAMESPACE or "default")`)
	pf.StringVar(&c.protocol, "protocol", "", "connect or grpc (default connect)")
	pf.StringVar(&c.token, "token", "", "a bearer token sent as Authorization (default from the context or CUP_TOKEN)")
	pf.StringVar(&c.tokenFile, "token-file", "", "a file holding the bearer token, read before every call; --token wins (default from the context or CUP_TOKEN_FILE)")
	pf.StringVar(&c.tls.certificateAuthority, "certificate-authority", "", "a PEM file of the CAs to trust instead of the system's (default from the context or CUP_CERTIFICATE_AUTHORITY)")
	pf.StringVar(&c.tls.clientCertificate, "client-certificate", "", "a PEM client certificate for TLS, with --client-key (default from the context or CUP_CLIENT_CERTIFICATE)")
	pf.StringVar(&c.tls.clientKey, "client-key", "", "the PEM private key of --client-certificate (default from the context or CUP_CLIENT_KEY)")
	pf.BoolVar(&c.tls.insecureSkipTLSVerify, "insecure-skip-tls-verify", false, "do not verify the server's certificate (insecure: anyone in between can read and change the calls)")
	_ = root.RegisterFlagCompletionFunc("protocol", cobra.FixedCompletions([]string{"connect", "grpc"}, cobra.ShellCompDirectiveNoFileComp))

	root.AddCommand(
		c.newGetCommand(),
		c.newDescribeCommand(),
		c.newRenderCommand(),
		c.newApplyCommand(),
		c.newCreateCommand(),
		c.newDeleteCommand(),
		c.newDiffCommand(),
		c.newEditCommand(),
		c.newPatchCommand(),
		c.newMetadataCommand(true),
		c.newMetadataCommand(false),
		c.newHistoryCommand(),
		c.newRevertCommand(),
		c.newAPIResourcesCommand(),
		c.newExplainCommand(),
		c.newProposalsCommand(),
		c.newGraphCommand(),
		c.newConfigCommand(),
		c.newVersionCommand(),
	)
	refuseUnknownSubcommands(root)
	return root
}

// connect returns the clients, made once per invocation.
func (c *cli) connect() (*connection, error) {
	if c.conn != nil {
		return c.conn, nil
	}
	s, err := c.settings()
	if err != nil {
		return nil, err
	}
	if s.tls.insecureSkipTLSVerify {
		fmt.Fprintln(c.stderr, "warning: insecure-skip-tls-verify is set: the server's certificate is not verified, so anyone in between can read and change the calls, token included")
	}
	asked := new(atomic.Bool)
	hc, err := newHTTPClient(s, asked)
	if err != nil {
		return nil, err
	}
	server := strings.TrimSuffix(s.server, "/")
	var opts []connect.ClientOption
	if s.protocol == "grpc" {
		opts = append(opts, connect.WithGRPC())
	}
	var token *bearer
	if s.token != "" || s.tokenFile != "" {
		token = &bearer{token: s.token, file: s.tokenFile}
		opts = append(opts, connect.WithInterceptors(token.interceptor()))
	}
	c.conn = &connection{
		namespace:   s.namespace,
		credentials: s.token != "" || s.tokenFile != "" || s.tls.clientCertificate != "",
		clientCert:  s.tls.clientCertificate != "",
		certAsked:   asked,
		http:        hc,
		server:      server,
		token:       token,
		resources:   cupv1alpha1connect.NewResourceServiceClient(hc, server, opts...),
		discovery:   cupv1alpha1connect.NewDiscoveryServiceClient(hc, server, opts...),
		proposals:   cupv1alpha1connect.NewProposalServiceClient(hc, server, opts...),
	}
	return c.conn, nil
}

// close lets go of the connections the invocation opened.
func (c *cli) close() {
	if c.conn != nil {
		c.conn.http.CloseIdleConnections()
	}
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
