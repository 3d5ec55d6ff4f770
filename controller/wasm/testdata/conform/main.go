// Command conform is a controller module for cup's wasm controller that
// keeps each resource in its own file,
//
//	/<group>/<version>/<plural>/<namespace>/<name>.json
//
// holding the bytes put received. The tests run the conformance suite
// against it.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
)

type resource struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Namespace string            `json:"namespace"`
		Name      string            `json:"name"`
		Labels    map[string]string `json:"labels"`
	} `json:"metadata"`
}

// exit codes of the protocol
const (
	failed   = 1
	notFound = 2
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) < 3 {
		return fail(failed, "usage: get|list|put|delete <kind> <namespace> [<name>]")
	}
	verb, kind, namespace := args[0], args[1], args[2]
	if kind != os.Getenv("CUP_KIND") {
		return fail(failed, "kind %q, but CUP_KIND is %q", kind, os.Getenv("CUP_KIND"))
	}
	dir := path.Join("/", os.Getenv("CUP_GROUP"), os.Getenv("CUP_VERSION"), os.Getenv("CUP_PLURAL"), namespace)
	if verb == "list" {
		return list(dir, args[3:])
	}
	if len(args) != 4 {
		return fail(failed, "%s wants a name", verb)
	}
	name := args[3]
	if strings.Contains(name, "/") {
		json.NewEncoder(os.Stderr).Encode(map[string]string{"code": "invalid_argument", "message": fmt.Sprintf("name %q holds a slash", name)})
		return failed
	}
	file := path.Join(dir, name+".json")
	switch verb {
	case "get":
		data, err := os.ReadFile(file)
		if errors.Is(err, fs.ErrNotExist) {
			return fail(notFound, "%s %s/%s not found", kind, namespace, name)
		} else if err != nil {
			return fail(failed, "%v", err)
		}
		os.Stdout.Write(data)
	case "put":
		data, err := io.ReadAll(os.Stdin)
		if err != nil {
			return fail(failed, "reading stdin: %v", err)
		}
		var r resource
		if err := json.Unmarshal(data, &r); err != nil {
			return fail(failed, "decoding stdin: %v", err)
		}
		if r.Metadata.Namespace != namespace || r.Metadata.Name != name || r.APIVersion != os.Getenv("CUP_API_VERSION") {
			return fail(failed, "stdin holds %s %s/%s", r.APIVersion, r.Metadata.Namespace, r.Metadata.Name)
		}
		if old, err := os.ReadFile(file); err == nil && bytes.Equal(old, data) {
			return 0
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fail(failed, "%v", err)
		}
		if err := os.WriteFile(file, data, 0o644); err != nil {
			return fail(failed, "%v", err)
		}
	case "delete":
		err := os.Remove(file)
		if errors.Is(err, fs.ErrNotExist) {
			return fail(notFound, "%s %s/%s not found", kind, namespace, name)
		} else if err != nil {
			return fail(failed, "%v", err)
		}
	default:
		return fail(failed, "unknown verb %q", verb)
	}
	return 0
}

// list prints the resources of dir whose labels hold every key=value of
// selector, one after the other.
func list(dir string, selector []string) int {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return fail(notFound, "nothing in %s", dir)
	} else if err != nil {
		return fail(failed, "%v", err)
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		data, err := os.ReadFile(path.Join(dir, e.Name()))
		if err != nil {
			return fail(failed, "%v", err)
		}
		if len(selector) > 0 { // decoding is the costly part: only when needed
			var r resource
			if err := json.Unmarshal(data, &r); err != nil {
				return fail(failed, "%s: %v", e.Name(), err)
			}
			if !matches(r.Metadata.Labels, selector) {
				continue
			}
		}
		os.Stdout.Write(data)
	}
	return 0
}

func matches(labels map[string]string, selector []string) bool {
	for _, term := range selector {
		k, v, _ := strings.Cut(term, "=")
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

func fail(code int, format string, args ...any) int {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	return code
}
