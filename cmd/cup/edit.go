package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
)

// maxEdits is how many times edit re-opens the editor after the server
// rejected the resource.
const maxEdits = 5

func (c *cli) newEditCommand() *cobra.Command {
	var w writeFlags
	cmd := &cobra.Command{
		Use:   "edit TYPE NAME | TYPE/NAME",
		Short: "Edit a resource in $EDITOR and write it back",
		Long: `Open a resource as YAML in $EDITOR (else $VISUAL, else vi) and write it back
when the editor exits, only if nobody changed it meanwhile. When the server
rejects the result (an invalid resource), the editor opens again with the
error at the top of the file as # comments; an unchanged file cancels.`,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: c.completeTypes,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			t, name, err := c.resourceArgs(ctx, args)
			if err != nil {
				return err
			}
			conn, err := c.connect()
			if err != nil {
				return err
			}
			r, err := c.getResource(ctx, t, conn.namespace, name, "")
			if err != nil {
				return err
			}
			rv := r.GetMetadata().GetResourceVersion()
			cs, err := c.changeSet(ctx, &w)
			if err != nil {
				return err
			}
			m, err := resourceObject(r)
			if err != nil {
				return err
			}
			var original bytes.Buffer
			if err := encode(&original, m, "yaml"); err != nil {
				return err
			}
			dir, err := os.MkdirTemp("", "cup-edit-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			file := filepath.Join(dir, t.plural()+"-"+name+".yaml")
			content := original.Bytes()
			for attempt := 0; ; attempt++ {
				if err := os.WriteFile(file, content, 0o600); err != nil {
					return err
				}
				if err := c.runEditor(file); err != nil {
					return err
				}
				edited, err := os.ReadFile(file)
				if err != nil {
					return err
				}
				body := stripComments(edited)
				if bytes.Equal(bytes.TrimSpace(body), bytes.TrimSpace(original.Bytes())) || bytes.Equal(edited, content) {
					_, err := fmt.Fprintln(c.stdout, "Edit cancelled, no changes made.")
					return err
				}
				// The file as edited, comments and all, so that the lines
				// an error names are the file's.
				rs, err := parseResources(file, edited)
				if err == nil && len(rs) != 1 {
					err = errors.New("the file must hold exactly one resource")
				}
				if err == nil {
					tg := target{t: t, namespace: conn.namespace, r: rs[0]}
					if tg.r.GetMetadata() != nil {
						tg.r.Metadata.ResourceVersion = ""
					}
					var pr *cupv1alpha1.PutResponse
					if pr, err = c.put(ctx, tg, &w, cs, w.key(0, 1), w.dryRun, rv); err == nil {
						_, err := fmt.Fprintf(c.stdout, "%s/%s edited: %s\n", t.qualified(), name, describeResult(pr.GetResult()))
						return err
					}
				}
				if connect.CodeOf(err) == connect.CodeAborted {
					return fmt.Errorf("%s/%s changed since it was read; run cup edit again (%s)", t.qualified(), name, errorMessage(err))
				}
				invalid := connect.CodeOf(err) == connect.CodeInvalidArgument || connect.CodeOf(err) == connect.CodeUnknown
				if !invalid || attempt+1 >= maxEdits {
					return err
				}
				var buf bytes.Buffer
				buf.WriteString("# Please edit the resource below. Lines beginning with '#' are ignored;\n# an unchanged file cancels the edit.\n#\n")
				for _, l := range strings.Split(errorMessage(err), "\n") {
					buf.WriteString("# " + l + "\n")
				}
				buf.WriteString("#\n")
				buf.Write(body)
				content = buf.Bytes()
			}
		},
	}
	w.add(cmd.Flags())
	return cmd
}

// stripComments drops the lines starting with '#'.
func stripComments(b []byte) []byte {
	var out []byte
	for line := range bytes.Lines(b) {
		if bytes.HasPrefix(bytes.TrimLeft(line, " \t"), []byte("#")) {
			continue
		}
		out = append(out, line...)
	}
	return out
}

// runEditor runs $EDITOR (else $VISUAL, else vi) on file.
func (c *cli) runEditor(file string) error {
	editor := firstNonEmpty(os.Getenv("EDITOR"), os.Getenv("VISUAL"), "vi")
	cmd := exec.Command("sh", "-c", editor+` "$1"`, "sh", file)
	cmd.Stdin = os.Stdin
	cmd.Stdout = os.Stdout
	cmd.Stderr = c.stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("editor %q: %w", editor, err)
	}
	return nil
}
