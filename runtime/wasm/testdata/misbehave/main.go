// Command misbehave is a reconciler module for cup's wasm transform that
// misbehaves on demand: the reconciler's name in its arguments picks how.
// The tests use it to check the protocol's exit codes, the strict reading
// of responses and the limits.
package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
)

// responses are what the modes that exit 0 write on stdout, as is.
var responses = map[string]string{
	"empty":         ``,
	"nothing":       `{"outputs": []}`,
	"unknownfield":  `{"outputs": [], "status": {}}`,
	"nooutputs":     `{}`,
	"nulloutputs":   `{"outputs": null}`,
	"trailing":      `{"outputs": []} {"outputs": []}`,
	"notjson":       `{"outputs": [`,
	"deep":          `{"outputs": [{"apiVersion": "x.dev/v1", "kind": "X", "metadata": {"name": "x"}, "spec": {"a": ` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}}]}`,
	"arrayspec":     `{"outputs": [{"apiVersion": "x.dev/v1", "kind": "X", "metadata": {"name": "x"}, "spec": [1]}]}`,
	"unknownmeta":   `{"outputs": [{"apiVersion": "x.dev/v1", "kind": "X", "metadata": {"name": "x", "uid": "1"}}]}`,
	"noname":        `{"outputs": [{"apiVersion": "x.dev/v1", "kind": "X", "metadata": {}}]}`,
	"nokind":        `{"outputs": [{"apiVersion": "x.dev/v1", "metadata": {"name": "x"}}]}`,
	"twice":         `{"outputs": [{"apiVersion": "x.dev/v1", "kind": "X", "metadata": {"namespace": "a", "name": "x"}}, {"apiVersion": "x.dev/v1", "kind": "X", "metadata": {"namespace": "a", "name": "x"}}]}`,
	"nullspec":      `{"outputs": [{"apiVersion": "x.dev/v1", "kind": "X", "metadata": {"name": "x", "resourceVersion": "abc"}, "spec": null}]}`,
	"badstatus":     `{"outputs": [], "conditions": [{"type": "Published", "status": "Yes"}]}`,
	"notype":        `{"outputs": [], "conditions": [{"type": "", "status": "True"}]}`,
	"owncondition":  `{"outputs": [], "conditions": [{"type": "Ready", "status": "True"}]}`,
	"twocondition":  `{"outputs": [], "conditions": [{"type": "A", "status": "True"}, {"type": "A", "status": "False"}]}`,
	"conditiontime": `{"outputs": [], "conditions": [{"type": "A", "status": "True", "lastTransitionTime": "2022-01-01T00:00:00Z"}]}`,
	"badrequeue":    `{"outputs": [], "requeueAfter": "soon"}`,
	"negrequeue":    `{"outputs": [], "requeueAfter": "-1s"}`,
	"full": `{"outputs": [{"apiVersion": "x.dev/v1", "kind": "X", "metadata": {"namespace": "a", "name": "x"}, "spec": {"n": 1e400, "s": "<&>"}}],
		"conditions": [{"type": "Published", "status": "False", "reason": "Waiting", "message": "for more flags"}], "requeueAfter": "1m30s"}`,
	"notutf8": "{\"outputs\": [{\"apiVersion\": \"x.dev/v1\", \"kind\": \"X\", \"metadata\": {\"name\": \"\xff\"}}]}",
}

func main() {
	if len(os.Args) != 3 || os.Args[1] != "reconcile" {
		fmt.Fprintln(os.Stderr, "usage: reconcile <mode>")
		os.Exit(1)
	}
	mode := os.Args[2]
	if r, ok := responses[mode]; ok {
		fmt.Print(r)
		return
	}
	switch mode {
	case "echo":
		// One output whose spec is the request, annotated with the
		// arguments, the environment and the root directory's entries.
		stdin, _ := io.ReadAll(os.Stdin)
		entries, err := os.ReadDir("/")
		var root []string
		for _, e := range entries {
			root = append(root, e.Name())
		}
		werr := os.WriteFile("/out.txt", []byte("x"), 0o644)
		fmt.Printf(`{"outputs": [{"apiVersion": "x.dev/v1", "kind": "Echo", "metadata": {"name": "echo", "annotations": {"args": %q, "env": %q, "root": %q, "write": %q}}, "spec": %s}]}`,
			strings.Join(os.Args, " "), strings.Join(os.Environ(), " "), fmt.Sprint(root, err), fmt.Sprint(werr), bytes.TrimSpace(stdin))
	case "invalidtext":
		fmt.Fprintln(os.Stderr, "spec.flags is missing")
		os.Exit(3)
	case "invalidjson":
		fmt.Fprintln(os.Stderr, "checking the flags")
		fmt.Fprintln(os.Stderr, `{"code": "invalid_input", "message": "flag \"x\" has no rollout"}`)
		os.Exit(3)
	case "invalidsilent":
		os.Exit(3)
	case "fail":
		fmt.Fprintln(os.Stderr, "something broke")
		os.Exit(1)
	case "failjson":
		fmt.Println(`{"message": "the store is locked"}`)
		os.Exit(1)
	case "exit2":
		os.Exit(2)
	case "panic":
		panic("boom: the reconciler panicked")
	case "loop":
		for {
		}
	case "alloc":
		var keep [][]byte
		for {
			b := make([]byte, 1<<20)
			b[len(b)-1] = 1
			keep = append(keep, b)
		}
	case "flood":
		chunk := bytes.Repeat([]byte(" "), 1<<20)
		for range 20 {
			os.Stdout.Write(chunk)
		}
	default:
		fmt.Fprintf(os.Stderr, "no mode named %q\n", mode)
		os.Exit(1)
	}
}
