package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"

	"github.com/cup-dev/cup/internal/buildinfo"
)

// versions is what `cup version -o json` prints.
type versions struct {
	Client buildinfo.Info  `json:"client"`
	Server *buildinfo.Info `json:"server,omitempty"`
}

func (c *cli) newVersionCommand() *cobra.Command {
	var clientOnly bool
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version of cup and of the server (GET /version)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "" && output != "json" {
				return fmt.Errorf("--output: %q is not json (leave it out for text)", output)
			}
			v := versions{Client: buildinfo.Read()}
			var err error
			if !clientOnly {
				v.Server, err = c.serverVersion(cmd)
			}
			if output == "json" {
				b, _ := json.MarshalIndent(v, "", "  ")
				fmt.Fprintf(c.stdout, "%s\n", b)
				return err
			}
			fmt.Fprintf(c.stdout, "Client: %s\n", v.Client)
			if v.Server != nil {
				fmt.Fprintf(c.stdout, "Server: %s\n", v.Server)
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&clientOnly, "client", false, "print the client's version only, without asking the server")
	cmd.Flags().StringVarP(&output, "output", "o", "", "json for JSON (default: text)")
	return cmd
}

// serverVersion asks the server for GET /version.
func (c *cli) serverVersion(cmd *cobra.Command) (*buildinfo.Info, error) {
	conn, err := c.connect()
	if err != nil {
		return nil, err
	}
	s, err := c.settings()
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(cmd.Context(), http.MethodGet, strings.TrimSuffix(s.server, "/")+"/version", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	res, err := conn.http.Do(req)
	if err != nil {
		return nil, connect.NewError(connect.CodeUnavailable, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 1<<16))
	if err != nil {
		return nil, connect.NewError(connect.CodeUnavailable, err)
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the server answered GET /version with %s: %s", res.Status, strings.TrimSpace(string(body)))
	}
	var v buildinfo.Info
	if err := json.Unmarshal(body, &v); err != nil || v.Version == "" {
		return nil, errors.New("the server's GET /version answer is not a version: is it a cupd?")
	}
	return &v, nil
}
