package document_test

import (
	"testing"

	"github.com/cup-dev/cup/internal/document"
)

func TestInexactNumber(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		json, path string
		found      bool
	}{
		{`{"a":1,"b":0.1,"c":1.0,"d":-0,"e":1e21,"f":9007199254740992,"g":5e-324,"h":1.7976931348623157e308}`, "", false},
		{`{"limits":{"max":9007199254740993}}`, "limits.max", true},
		{`{"a":[1,{"b":12345678901234567890}]}`, "a[1].b", true},
		{`{"n":1e400}`, "n", true},
		{`{"n":1e-400}`, "n", true},
		{`{"n":0.1000000000000000055511151231257827}`, "n", true},
		{`{"z":9007199254740993,"a":{"b":18446744073709551615}}`, "a.b", true},
		{`not json`, "", false},
		{`{"s":"12345678901234567890 in a string","t":"\\","u":"\"9007199254740993"}`, "", false},
	} {
		path, found := document.InexactNumber([]byte(tc.json))
		if path != tc.path || found != tc.found {
			t.Errorf("InexactNumber(%s) = %q, %v; want %q, %v", tc.json, path, found, tc.path, tc.found)
		}
		if got := document.HasInexactNumber([]byte(tc.json)); got != tc.found {
			t.Errorf("HasInexactNumber(%s) = %v, want %v", tc.json, got, tc.found)
		}
	}
}

func TestInexactInYAML(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		json, path string
		found      bool
	}{
		{`{"a":9007199254740993,"b":18446744073709551615,"c":-9223372036854775808,"d":0.1}`, "", false},
		{`{"a":{"b":123456789012345678901234567890}}`, "a.b", true},
		{`{"a":[0.1000000000000000055511151231257827]}`, "a[0]", true},
	} {
		path, found := document.InexactInYAML([]byte(tc.json))
		if path != tc.path || found != tc.found {
			t.Errorf("InexactInYAML(%s) = %q, %v; want %q, %v", tc.json, path, found, tc.path, tc.found)
		}
	}
}
