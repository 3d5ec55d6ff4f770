package document

import (
	"regexp"
	"strings"
)

var dnsLabelRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// IsDNSLabel reports whether s is an RFC 1123 label, as Kubernetes names
// namespaces: at most 63 lowercase letters, digits and '-', starting and
// ending with a letter or digit.
func IsDNSLabel(s string) bool { return len(s) <= 63 && dnsLabelRE.MatchString(s) }

// IsDNSSubdomain reports whether s is an RFC 1123 subdomain, as Kubernetes
// names API groups: at most 253 characters of dot-separated DNS labels.
func IsDNSSubdomain(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for l := range strings.SplitSeq(s, ".") {
		if !IsDNSLabel(l) {
			return false
		}
	}
	return true
}
