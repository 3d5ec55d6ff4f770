package scmtest_test

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cup-dev/cup/scm/scmtest"
)

func TestRecorder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		n    int
		want []scmtest.Fault // for the calls after SetFault
	}{
		{"Two", 2, []scmtest.Fault{scmtest.FaultInvalid, scmtest.FaultInvalid, scmtest.FaultNone}},
		{"UntilReset", -1, []scmtest.Fault{scmtest.FaultInvalid, scmtest.FaultInvalid, scmtest.FaultInvalid}},
		{"Zero", 0, []scmtest.Fault{scmtest.FaultNone}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var r scmtest.Recorder
			r.SetFault(scmtest.FaultInvalid, tt.n, time.Second)
			for i, want := range tt.want {
				req := httptest.NewRequest("POST", "/api/v3/x?a=b", strings.NewReader("body"))
				if got, _ := r.Record(req); got != want {
					t.Errorf("call %d: fault %v, want %v", i, got, want)
				}
				if b, _ := io.ReadAll(req.Body); string(b) != "body" {
					t.Errorf("call %d: body left %q", i, b)
				}
			}
			reqs := r.Requests()
			if len(reqs) != len(tt.want) || reqs[0].Path != "/api/v3/x" || reqs[0].Query != "a=b" || string(reqs[0].Body) != "body" {
				t.Errorf("Requests() = %+v", reqs)
			}
			r.SetFault(scmtest.FaultNone, 0, 0)
			if got, _ := r.Record(httptest.NewRequest("GET", "/", nil)); got != scmtest.FaultNone {
				t.Errorf("after reset: fault %v", got)
			}
		})
	}
}
