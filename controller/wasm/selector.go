package wasm

import (
	"slices"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/cup-dev/cup/controller"
)

// requirer is a selector that can tell its terms: a Kubernetes
// labels.Selector, or a type embedding one.
type requirer interface {
	Requirements() (labels.Requirements, bool)
}

// selectorArgs returns the key=value arguments of list for sel, sorted, when
// sel is a conjunction of label equalities it can tell (see requirer), and
// nil otherwise. Either way the caller filters the results with sel: the
// arguments let a module skip work, they do not decide.
func selectorArgs(sel controller.Selector) []string {
	r, ok := sel.(requirer)
	if !ok {
		return nil
	}
	reqs, selectable := r.Requirements()
	if !selectable {
		return nil
	}
	var args []string
	for _, req := range reqs {
		values := req.ValuesUnsorted()
		switch req.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
			if len(values) != 1 {
				return nil
			}
			args = append(args, req.Key()+"="+values[0])
		default:
			return nil
		}
	}
	slices.Sort(args)
	return args
}
