// Command fliptlike is a WASI command that behaves, as seen from cupd, like
// the original Cup's Flipt controller (ext/controllers/flipt.io in
// flipt-io/cup) does for the Flag kind, so that cup's tests need neither its
// code nor its binary:
//
//   - flags live in Flipt's features.yml files (any file whose path ends in
//     features.yml or features.yaml), one document per namespace;
//   - get of a missing flag exits 1 with the text "flag <ns>/<name>: not
//     found" on stderr (no newline); get in a namespace without a document
//     exits 0 and prints nothing;
//   - put and delete rewrite the whole document with gopkg.in/yaml.v2's
//     encoder (here go.yaml.in/yaml/v2, the same code), after decoding it
//     with yaml.v3, which is what decides the bytes of the file;
//   - delete of a missing flag exits 0 and writes nothing.
//
// It is built from source by the server tests; it lives in the main module
// so that its YAML libraries are the ones go.mod already pins.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	yamlv2 "go.yaml.in/yaml/v2"
	yamlv3 "go.yaml.in/yaml/v3"
)

// The types below give the layout of Flipt's features.yml as the original
// controller wrote it: field order, omitempty and the JSON names of specs.

type document struct {
	Version   string     `yaml:"version,omitempty" json:"version"`
	Namespace string     `yaml:"namespace,omitempty" json:"namespace"`
	Flags     []*flag    `yaml:"flags,omitempty" json:"flags"`
	Segments  []*segment `yaml:"segments,omitempty" json:"segments"`
}

type flag struct {
	Key         string     `yaml:"key,omitempty" json:"key"`
	Name        string     `yaml:"name,omitempty" json:"name"`
	Type        string     `yaml:"type,omitempty" json:"type"`
	Description string     `yaml:"description,omitempty" json:"description"`
	Enabled     bool       `yaml:"enabled" json:"enabled"`
	Variants    []*variant `yaml:"variants,omitempty" json:"variants"`
	Rules       []*rule    `yaml:"rules,omitempty" json:"rules"`
	Rollouts    []*rollout `yaml:"rollouts,omitempty" json:"rollouts"`
}

type variant struct {
	Key         string `yaml:"key,omitempty" json:"key"`
	Name        string `yaml:"name,omitempty" json:"name"`
	Description string `yaml:"description,omitempty" json:"description"`
	Attachment  any    `yaml:"attachment,omitempty" json:"attachment"`
}

type rule struct {
	SegmentKey    string          `yaml:"segment,omitempty" json:"segment_key"`
	Rank          uint            `yaml:"rank,omitempty" json:"rank"`
	Distributions []*distribution `yaml:"distributions,omitempty" json:"distributions"`
}

type distribution struct {
	VariantKey string  `yaml:"variant,omitempty" json:"variant_key"`
	Rollout    float32 `yaml:"rollout,omitempty" json:"rollout"`
}

type rollout struct {
	Description string         `yaml:"description,omitempty" json:"description"`
	Segment     *segmentRule   `yaml:"segment,omitempty" json:"segment"`
	Threshold   *thresholdRule `yaml:"threshold,omitempty" json:"threshold"`
}

type segmentRule struct {
	Key   string `yaml:"key,omitempty" json:"key"`
	Value bool   `yaml:"value,omitempty" json:"value"`
}

type thresholdRule struct {
	Percentage float32 `yaml:"percentage,omitempty" json:"percentage"`
	Value      bool    `yaml:"value,omitempty" json:"value"`
}

type segment struct {
	Key         string        `yaml:"key,omitempty" json:"key"`
	Name        string        `yaml:"name,omitempty" json:"name"`
	Description string        `yaml:"description,omitempty" json:"description"`
	Constraints []*constraint `yaml:"constraints,omitempty" json:"constraints"`
	MatchType   string        `yaml:"match_type,omitempty" json:"match_type"`
}

type constraint struct {
	Type        string `yaml:"type,omitempty" json:"type"`
	Property    string `yaml:"property,omitempty" json:"property"`
	Operator    string `yaml:"operator,omitempty" json:"operator"`
	Value       string `yaml:"value,omitempty" json:"value"`
	Description string `yaml:"description,omitempty" json:"description"`
}

// resource is the original's core.Resource, labels and annotations
// included as null.
type resource struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Namespace   string            `json:"namespace"`
		Name        string            `json:"name"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec json.RawMessage `json:"spec"`
}

var errNotFound = errors.New("not found")

func main() {
	if len(os.Args) < 4 || os.Args[2] != "Flag" {
		fmt.Fprintf(os.Stderr, "usage: %s get|list|put|delete Flag <namespace> [<name>]\n", os.Args[0])
		os.Exit(1)
	}
	verb, ns, name := os.Args[1], os.Args[3], ""
	if len(os.Args) > 4 {
		name = os.Args[4]
	}
	var err error
	switch verb {
	case "get":
		err = get(ns, name)
	case "list":
		err = list(ns)
	case "put":
		err = put()
	case "delete":
		err = del(ns, name)
	default:
		err = fmt.Errorf("unexpected command: %q", verb)
	}
	if err != nil {
		// The original's SDK exits 2 only for its own ErrNotFound, which
		// the Flipt controller does not use: a missing flag exits 1.
		fmt.Fprint(os.Stderr, err.Error())
		os.Exit(1)
	}
}

// walk calls fn with each features file's path and document, in WalkDir
// order, until fn returns errStop.
func walk(fn func(path string, doc *document) error) error {
	var paths []string
	err := fs.WalkDir(os.DirFS("."), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && (strings.HasSuffix(p, "features.yml") || strings.HasSuffix(p, "features.yaml")) {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		doc := new(document)
		if err := yamlv3.Unmarshal(b, doc); err != nil {
			return err
		}
		if doc.Namespace == "" {
			doc.Namespace = "default"
		}
		if err := fn(p, doc); err != nil {
			if errors.Is(err, errStop) {
				return nil
			}
			return err
		}
	}
	return nil
}

var errStop = errors.New("stop")

func emit(ns string, f *flag) error {
	var r resource
	r.APIVersion, r.Kind = "flipt.io/v1alpha1", "Flag"
	r.Metadata.Namespace, r.Metadata.Name = ns, f.Key
	spec := *f
	spec.Key, spec.Name = "", "" // the resource's name carries them
	var err error
	if r.Spec, err = json.Marshal(&spec); err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(&r)
}

// get answers from the first document of the namespace, as the original
// does.
func get(ns, name string) error {
	return walk(func(_ string, doc *document) error {
		if doc.Namespace != ns {
			return nil
		}
		for _, f := range doc.Flags {
			if f.Key == name {
				if err := emit(ns, f); err != nil {
					return err
				}
				return errStop
			}
		}
		return fmt.Errorf("flag %s/%s: %w", ns, name, errNotFound)
	})
}

func list(ns string) error {
	return walk(func(_ string, doc *document) error {
		if doc.Namespace != ns {
			return nil
		}
		for _, f := range doc.Flags {
			if err := emit(ns, f); err != nil {
				return err
			}
		}
		return nil
	})
}

func write(path string, doc *document) error {
	fi, err := os.OpenFile(path, os.O_RDWR|os.O_TRUNC, 0o666)
	if err != nil {
		return err
	}
	if err := yamlv2.NewEncoder(fi).Encode(doc); err != nil {
		fi.Close()
		return err
	}
	return fi.Close()
}

// put reads the resource from stdin and upserts its flag in every document
// of the resource's namespace; key and name both become the resource's name.
func put() error {
	var r resource
	if err := json.NewDecoder(os.Stdin).Decode(&r); err != nil {
		return err
	}
	f := new(flag)
	if err := json.Unmarshal(r.Spec, f); err != nil {
		return err
	}
	f.Key, f.Name = r.Metadata.Name, r.Metadata.Name
	return walk(func(path string, doc *document) error {
		if doc.Namespace != r.Metadata.Namespace {
			return nil
		}
		found := false
		for i, g := range doc.Flags {
			if found = g.Key == f.Key; found {
				doc.Flags[i] = f
				break
			}
		}
		if !found {
			doc.Flags = append(doc.Flags, f)
		}
		return write(path, doc)
	})
}

func del(ns, name string) error {
	return walk(func(path string, doc *document) error {
		if doc.Namespace != ns {
			return nil
		}
		n := len(doc.Flags)
		doc.Flags = slices.DeleteFunc(doc.Flags, func(f *flag) bool { return f.Key == name })
		if len(doc.Flags) == n {
			return nil
		}
		return write(path, doc)
	})
}
