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
// 0 on success, 1 after printing "error: <message>" to stderr.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cmd := newRootCommand(stdin, stdout, stderr)
	cmd.SetArgs(args)
	if err := cmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(stderr, "error: %s\n", errorMessage(err))
		return 1
	}
	return 0
}

// errorMessage is what the user sees of err: a Connect error's message
// without its code prefix, and any other error as it is.
func errorMessage(err error) string {
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

	server, context, namespace, protocol, token string

	root *cobra.Command
	defs []*cupv1alpha1.ResourceDefinition // cached ListDefinitions
	conn *connection
}

// connection is the resolved endpoint and its clients.
type connection struct {
	namespace string
	resources cupv1alpha1connect.ResourceServiceClient
	discovery cupv1alpha1connect.DiscoveryServiceClient
	proposals cupv1alpha1connect.ProposalServiceClient
}

func newRootCommand(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	c := &cli{stdin: stdin, stdout: stdout, stderr: stderr}
	root := &cobra.Command{
		Use:   "cup",
		Short: "cup reads and writes the resources a cupd serves from Git",
		Long: `cup reads and writes the resources a cupd serves from a Git repository.

The server, namespace, token and protocol come from, in order: the flags;
the environment (CUP_SERVER, CUP_NAMESPACE, CUP_TOKEN, CUP_CONTEXT); the
current context of the configuration file ($CUP_CONFIG, or cup/config.yaml
in the user configuration directory; see "cup config"); and the defaults
http://127.0.0.1:8181, namespace "default" and the Connect protocol.`,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	c.root = root
	pf := root.PersistentFlags()
	pf.StringVar(&c.server, "server", "", "cupd's URL (default from the context, CUP_SERVER or http://127.0.0.1:8181)")
	pf.StringVar(&c.context, "context", "", "the configuration context to use (default CUP_CONTEXT or the current context)")
	pf.StringVarP(&c.namespace, "namespace", "n", "", `the namespace (default from the context, CUP_NAMESPACE or "default")`)
	pf.StringVar(&c.protocol, "protocol", "", "connect or grpc (default connect)")
	pf.StringVar(&c.token, "token", "", "a bearer token sent as Authorization (default from the context or CUP_TOKEN)")
	_ = root.RegisterFlagCompletionFunc("protocol", cobra.FixedCompletions([]string{"connect", "grpc"}, cobra.ShellCompDirectiveNoFileComp))

	root.AddCommand(
		c.newGetCommand(),
		c.newApplyCommand(),
		c.newDeleteCommand(),
		c.newDiffCommand(),
		c.newEditCommand(),
		c.newAPIResourcesCommand(),
		c.newExplainCommand(),
		c.newProposalsCommand(),
		c.newConfigCommand(),
	)
	return root
}

// settings resolves the effective server, namespace, token and protocol.
func (c *cli) settings() (server, namespace, token, protocol string, err error) {
	cfg, _, err := loadConfig()
	if err != nil {
		return "", "", "", "", err
	}
	name := firstNonEmpty(c.context, os.Getenv("CUP_CONTEXT"), cfg.CurrentContext)
	var ctx configContext
	if name != "" {
		p := cfg.find(name)
		if p == nil {
			return "", "", "", "", fmt.Errorf("context %q is not in the configuration (see cup config view)", name)
		}
		ctx = *p
	}
	server = firstNonEmpty(c.server, os.Getenv("CUP_SERVER"), ctx.Server, "http://127.0.0.1:8181")
	namespace = firstNonEmpty(c.namespace, os.Getenv("CUP_NAMESPACE"), ctx.Namespace, "default")
	token = firstNonEmpty(c.token, os.Getenv("CUP_TOKEN"), ctx.Token)
	protocol = firstNonEmpty(c.protocol, ctx.Protocol, "connect")
	if protocol != "connect" && protocol != "grpc" {
		return "", "", "", "", fmt.Errorf("--protocol: %q is neither connect nor grpc", protocol)
	}
	return server, namespace, token, protocol, nil
}

// connect returns the clients, made once per invocation.
func (c *cli) connect() (*connection, error) {
	if c.conn != nil {
		return c.conn, nil
	}
	server, namespace, token, protocol, err := c.settings()
	if err != nil {
		return nil, err
	}
	server = strings.TrimSuffix(server, "/")
	hc := http.DefaultClient
	var opts []connect.ClientOption
	if protocol == "grpc" {
		protos := new(http.Protocols)
		protos.SetUnencryptedHTTP2(true)
		protos.SetHTTP2(true)
		hc = &http.Client{Transport: &http.Transport{Protocols: protos}}
		opts = append(opts, connect.WithGRPC())
	}
	if token != "" {
		opts = append(opts, connect.WithInterceptors(connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
			return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
				req.Header().Set("Authorization", "Bearer "+token)
				return next(ctx, req)
			}
		})))
	}
	c.conn = &connection{
		namespace: namespace,
		resources: cupv1alpha1connect.NewResourceServiceClient(hc, server, opts...),
		discovery: cupv1alpha1connect.NewDiscoveryServiceClient(hc, server, opts...),
		proposals: cupv1alpha1connect.NewProposalServiceClient(hc, server, opts...),
	}
	return c.conn, nil
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
