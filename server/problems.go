package server

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/cup-dev/cup/controller"
	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
)

// maxWarnings bounds the warnings a listing's first page carries, in its
// ListResponse and in Warning headers; ListRequest.problems has them all.
const maxWarnings = 20

// problem is a file a listing left out, as a ListWarning tells it.
type problem struct {
	path   string // empty when the controller does not say where
	reason string
}

func (p problem) proto() *cupv1alpha1.ListWarning {
	return &cupv1alpha1.ListWarning{Path: p.path, Reason: p.reason}
}

// text is the warning as one line, "path: reason".
func (p problem) text() string {
	if p.path == "" {
		return p.reason
	}
	return p.path + ": " + p.reason
}

// problemOf turns a controller's error about the file at origin, which wraps
// controller.ErrMalformed, into a problem whose reason does not repeat what
// the path says.
func problemOf(origin string, err error) problem {
	reason := strings.TrimPrefix(err.Error(), controller.ErrMalformed.Error()+": ")
	if origin != "" {
		reason = strings.TrimPrefix(reason, origin+": ")
		reason = strings.TrimPrefix(reason, origin+" ")
	}
	return problem{path: origin, reason: reason}
}

// checkListedName returns an error when name is not a name the API accepts
// (the pattern and length of GetRequest.name): a listed resource by that
// name could not be read, replaced or deleted, so it is left out.
func checkListedName(t *Type, name string) error {
	if validName(name) {
		return nil
	}
	return fmt.Errorf("holds %s %q, which is not a valid name (at most 253 lower-case letters, digits, '-' and '.', "+
		"starting and ending with a letter or digit): it cannot be read by that name; rename the resource and its file",
		t.Kind, name)
}

// validName reports whether name matches
// ^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$
// and is at most 253 bytes long, as the proto's rule for names says.
func validName(name string) bool {
	if name == "" || len(name) > 253 {
		return false
	}
	for label := range strings.SplitSeq(name, ".") {
		if label == "" || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			if c := label[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// warningHeaders returns the Warning header values (RFC 7234, as
// Kubernetes sends them: `299 - "text"`) for shown, at most maxWarnings
// problems, and one more counting the more left unshown.
func warningHeaders(shown []problem, more int) []string {
	out := make([]string, 0, len(shown)+1)
	for _, p := range shown {
		out = append(out, warningValue(p.text()))
	}
	if more > 0 {
		out = append(out, warningValue(fmt.Sprintf("%d more files left out of this list: list with ?problems=true for all of them", more)))
	}
	return out
}

// warningValue quotes text for a Warning header: control characters become
// spaces, and it is cut to 512 bytes.
func warningValue(text string) string {
	const limit = 512
	var b strings.Builder
	for _, r := range text {
		if b.Len() >= limit {
			b.WriteString("...")
			break
		}
		if r < 0x20 || r == 0x7f {
			r = ' '
		}
		b.WriteRune(r)
	}
	return "299 - " + strconv.Quote(b.String())
}
