package template

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/internal/document"
)

// decodeContent decodes one file's content in enc. The result carries no
// file path: it is cached by content and may be shared by several files.
func decodeContent(enc Encoding, data []byte) (d decoded) {
	defer func() {
		// A decoder bug must not take the server down with it, least of all
		// on one of List's worker goroutines.
		if p := recover(); p != nil {
			d = decoded{err: fmt.Errorf("decoding resource: %v", p)}
		}
	}()
	r, err := decode(enc, data)
	if err != nil {
		return decoded{err: err}
	}
	return decoded{res: r}
}

func decode(enc Encoding, data []byte) (*controller.Resource, error) {
	if enc == EncodingYAML {
		if err := checkSingleDocument(data); err != nil {
			return nil, err
		}
		j, err := yaml.YAMLToJSONStrict(data)
		if err != nil {
			return nil, fmt.Errorf("decoding YAML: %w", err)
		}
		data = j
	}
	r, err := controller.ParseResource(data)
	if err != nil {
		return nil, err
	}
	switch {
	case r.APIVersion == "":
		return nil, errors.New("decoding resource: missing apiVersion")
	case r.Kind == "":
		return nil, errors.New("decoding resource: missing kind")
	case r.Metadata.Name == "":
		return nil, errors.New("decoding resource: missing metadata.name")
	}
	// The resource version is cup's to set on reads; a file cannot choose it.
	r.Metadata.ResourceVersion = ""
	return r, nil
}

// checkSingleDocument rejects YAML holding more than one document, which a
// YAML decoder would otherwise silently drop. A document marker ("---" or
// "...") at the start of a line cannot occur inside a scalar, so a "---" after
// the first document's content starts another document, and content after
// "..." belongs to another document.
func checkSingleDocument(data []byte) error {
	content, ended := false, false
	for line := range bytes.Lines(data) {
		line = bytes.TrimRight(line, "\r\n")
		t := bytes.TrimSpace(line)
		switch {
		case isMarker(line, "---"):
			if content {
				return errors.New("decoding YAML: more than one document")
			}
			if rest := bytes.TrimSpace(line[3:]); len(rest) > 0 && rest[0] != '#' {
				content = true // "--- value" starts the document on the marker line
			}
		case isMarker(line, "..."):
			ended = content
		case len(t) == 0 || t[0] == '#':
			// Blank lines and comments are not content.
		case !content && t[0] == '%':
			// A directive before the document.
		default:
			if ended {
				return errors.New("decoding YAML: more than one document")
			}
			content = true
		}
	}
	return nil
}

func isMarker(line []byte, m string) bool {
	return bytes.HasPrefix(line, []byte(m)) && (len(line) == 3 || line[3] == ' ' || line[3] == '\t')
}

// encode renders r in enc. Equal resources give equal bytes.
func encode(enc Encoding, r *controller.Resource) ([]byte, error) {
	data, err := fileJSON(r)
	if err != nil {
		return nil, err
	}
	if enc == EncodingYAML {
		// JSONToYAML sorts keys, which puts apiVersion, kind, metadata and
		// spec in their usual order, and ends with a newline.
		if data, err = document.JSONToYAML(data); err != nil {
			return nil, fmt.Errorf("encoding resource as YAML: %w", err)
		}
	}
	return data, nil
}

// fileJSON returns r as encode writes it in JSON: an empty or null spec is
// left out.
func fileJSON(r *controller.Resource) ([]byte, error) {
	c := *r
	if s := bytes.TrimSpace(c.Spec); len(s) == 0 || string(s) == "null" {
		c.Spec = nil
	}
	return c.MarshalFile()
}

// sameContent reports whether a and b hold the same resource: equal
// apiVersion, kind, namespace, name, labels and annotations, and specs equal
// as JSON values. Numbers are equal when their decimal values are, so 1.0
// equals 1 but 9007199254740993 does not equal 9007199254740992. An empty
// spec equals none. The resource version does not count.
func sameContent(a, b *controller.Resource) bool {
	if a.APIVersion != b.APIVersion || a.Kind != b.Kind ||
		a.Metadata.Namespace != b.Metadata.Namespace || a.Metadata.Name != b.Metadata.Name ||
		!maps.Equal(a.Metadata.Labels, b.Metadata.Labels) ||
		!maps.Equal(a.Metadata.Annotations, b.Metadata.Annotations) {
		return false
	}
	va, err := specValue(a.Spec)
	if err != nil {
		return false
	}
	vb, err := specValue(b.Spec)
	if err != nil {
		return false
	}
	return valueEqual(va, vb)
}

func specValue(spec json.RawMessage) (any, error) {
	if len(bytes.TrimSpace(spec)) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(spec))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if m, ok := v.(map[string]any); ok && len(m) == 0 {
		return nil, nil
	}
	return v, nil
}

func valueEqual(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, av := range a {
			bv, ok := b[k]
			if !ok || !valueEqual(av, bv) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		return ok && slices.EqualFunc(a, b, valueEqual)
	case json.Number:
		b, ok := b.(json.Number)
		return ok && numberEqual(string(a), string(b))
	default: // string, bool, nil
		return a == b
	}
}

// numberEqual compares two JSON numbers by decimal value.
func numberEqual(a, b string) bool {
	if a == b {
		return true
	}
	ca, okA := canonicalNumber(a)
	cb, okB := canonicalNumber(b)
	return okA && okB && ca == cb
}

// canonicalNumber rewrites a JSON number as sign, significant digits and a
// decimal exponent, so that numbers of equal value give equal strings.
func canonicalNumber(s string) (string, bool) {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	mant, exp := s, int64(0)
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.ParseInt(strings.TrimPrefix(s[i+1:], "+"), 10, 32)
		if err != nil {
			return "", false
		}
		mant, exp = s[:i], e
	}
	digits := mant
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		digits = mant[:i] + mant[i+1:]
		exp -= int64(len(mant) - i - 1)
	}
	digits = strings.TrimLeft(digits, "0")
	if digits == "" {
		return "0", true
	}
	for strings.HasSuffix(digits, "0") {
		digits = digits[:len(digits)-1]
		exp++
	}
	sign := ""
	if neg {
		sign = "-"
	}
	return sign + digits + "e" + strconv.FormatInt(exp, 10), true
}
