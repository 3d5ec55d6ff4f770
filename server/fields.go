package server

import (
	"fmt"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// Field selectors: the Kubernetes syntax ("metadata.name=a,
// metadata.namespace!=b", with "=", "==" or "!="), on the only fields
// every resource has in its metadata. Anything else is refused, as the
// API server refuses a field it does not index.

// Fields a field selector may name.
const (
	fieldName      = "metadata.name"
	fieldNamespace = "metadata.namespace"
)

// filter is what a list or watch selects: by labels and by fields.
type filter struct {
	labels labels.Selector
	fields fields.Selector
	// name and namespace are what the field selector requires them to
	// equal, when it does: a list then reads no more than it must.
	name, namespace string
}

// parseFilter parses a list's or watch's selectors. Errors name the
// request's field: label_selector or field_selector.
func parseFilter(labelSelector, fieldSelector string) (filter, error) {
	f, vs := filterOf(labelSelector, fieldSelector, func(field string) string { return field })
	if len(vs) > 0 {
		return filter{}, invalidArgument(vs...)
	}
	return f, nil
}

// filterOf parses a list's or watch's selectors, naming the fields
// label_selector and field_selector in the violations by name.
func filterOf(labelSelector, fieldSelector string, name func(string) string) (filter, []FieldViolation) {
	var vs []FieldViolation
	ls, err := labels.Parse(labelSelector)
	if err != nil {
		vs = append(vs, FieldViolation{Field: name("label_selector"), Description: err.Error()})
	}
	fs, err := fields.ParseSelector(fieldSelector)
	if err != nil {
		vs = append(vs, FieldViolation{Field: name("field_selector"), Description: err.Error()})
	} else {
		for _, r := range fs.Requirements() {
			if r.Field != fieldName && r.Field != fieldNamespace {
				vs = append(vs, FieldViolation{Field: name("field_selector"), Description: fmt.Sprintf(
					"field label not supported: %s (only %s and %s are)", r.Field, fieldName, fieldNamespace)})
				break
			}
		}
	}
	if len(vs) > 0 {
		return filter{}, vs
	}
	f := filter{labels: ls, fields: fs}
	f.name, _ = fs.RequiresExactMatch(fieldName)
	f.namespace, _ = fs.RequiresExactMatch(fieldNamespace)
	return f, nil
}

// matches reports whether the filter selects e in namespace.
func (f filter) matches(namespace string, e *entry) bool {
	if !f.labels.Empty() && !f.labels.Matches(e.labels) {
		return false
	}
	return f.fields.Empty() || f.fields.Matches(fields.Set{fieldName: e.name, fieldNamespace: namespace})
}

// inNamespace reports whether the filter may select anything in
// namespace: whether it meets the field selector's requirements on the
// namespace.
func (f filter) inNamespace(namespace string) bool {
	for _, r := range f.fields.Requirements() {
		if r.Field != fieldNamespace {
			continue
		}
		switch r.Operator {
		case selection.Equals, selection.DoubleEquals:
			if namespace != r.Value {
				return false
			}
		case selection.NotEquals:
			if namespace == r.Value {
				return false
			}
		}
	}
	return true
}
