package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/cup-dev/cup/internal/memsource"
	"github.com/cup-dev/cup/internal/servertest"
	"github.com/cup-dev/cup/server"
)

// newPermissiveFixture serves the demo repository with the flags type's
// schema removed, as a type without a schema is served: nothing but the
// server's own limits stands between a body and the controller.
func newPermissiveFixture(t *testing.T, opts ...server.Option) *fixture {
	t.Helper()
	return newFixture(t,
		servertest.WithTypes(func(_ testing.TB, types []*server.Type) []*server.Type {
			for _, ty := range types {
				ty.Validate = nil
			}
			return types
		}),
		servertest.WithServerOptions(opts...))
}

func nested(depth int, leaf string) string {
	return strings.Repeat("[", depth) + leaf + strings.Repeat("]", depth)
}

// TestDeepBodiesCostTheirSize is the attack that got cupd OOM-killed: a
// 20 KB body nested 9,990 deep became a 200 MB file and diff, because the
// spec was indented before anything looked at it. It must now be refused
// for a cost of a small multiple of its size. Not parallel: it measures
// the bytes the process allocates while the request runs.
func TestDeepBodiesCostTheirSize(t *testing.T) {
	f := newPermissiveFixture(t)
	body := `{"spec":{"a":` + nested(9990, "") + `}}`
	for _, path := range []string{flagsPath + "/deep?dryRun=true", flagsPath + "/deep"} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		res := f.do(t, "PUT", path, body)
		runtime.ReadMemStats(&after)
		if res.status != http.StatusBadRequest || !strings.Contains(string(res.body), "--max-json-depth") || !strings.Contains(string(res.body), "body") {
			t.Fatalf("PUT %s of a body nested 9,990 deep = %d %.300s, want 400 naming the body and --max-json-depth", path, res.status, res.body)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > 50*uint64(len(body)) {
			t.Fatalf("PUT %s of a %d-byte body allocated %d KiB, more than 50 times its size", path, len(body), n>>10)
		}
	}
	// Within the limit the same shape is accepted, and stored.
	ok := `{"spec":{"a":` + nested(62, "1") + `}}` // 64 deep with the resource and spec
	if res := f.do(t, "PUT", flagsPath+"/deep", ok); res.status != http.StatusAccepted {
		t.Fatalf("PUT of a body nested 64 deep = %d %.300s", res.status, res.body)
	}
	if res := f.do(t, "PUT", flagsPath+"/deeper", `{"spec":{"a":`+nested(63, "1")+`}}`); res.status != http.StatusBadRequest {
		t.Fatalf("PUT of a body nested 65 deep = %d %.300s", res.status, res.body)
	}
}

// TestDeepSpecsAreRefusedOnEveryProtocol: the depth limit holds for specs
// that arrive as protobuf, naming resource.spec.
func TestDeepSpecsAreRefusedOnEveryProtocol(t *testing.T) {
	t.Parallel()
	var v any = 1.0
	for range 70 {
		v = []any{v}
	}
	spec, err := structpb.NewStruct(map[string]any{"enabled": true, "a": v})
	if err != nil {
		t.Fatal(err)
	}
	eachProtocol(t, func(t *testing.T, f *fixture, p protocol) {
		rs, _ := f.clients(p)
		r := flag(t, "deep", true, nil)
		r.Spec = spec
		req := putReq(r)
		req.DryRun = true
		_, err := rs.Put(t.Context(), connect.NewRequest(req))
		wantCode(t, err, connect.CodeInvalidArgument)
		if !strings.Contains(err.Error(), "resource.spec") || !strings.Contains(err.Error(), "--max-json-depth") {
			t.Fatalf("error %q names neither resource.spec nor --max-json-depth", err)
		}
	})
}

// TestResourceFileSizeIsBounded: a spec nested within the depth limit can
// still grow 60-fold when indented; the file form is bounded before it is
// encoded.
func TestResourceFileSizeIsBounded(t *testing.T) {
	t.Parallel()
	f := newPermissiveFixture(t, server.WithMaxResourceBytes(64<<10))
	leaves := strings.TrimSuffix(strings.Repeat("1,", 3000), ",")
	body := `{"spec":{"a":` + nested(60, leaves) + `}}` // 6 KB, 370 KB indented
	res := f.do(t, "PUT", flagsPath+"/wide?dryRun=true", body)
	if res.status != http.StatusBadRequest || !strings.Contains(string(res.body), "--max-resource-bytes") {
		t.Fatalf("PUT of a spec 370 KB indented = %d %.300s, want 400 naming --max-resource-bytes", res.status, res.body)
	}
	small := `{"spec":{"a":` + nested(60, "1,2,3") + `}}`
	res = f.do(t, "PUT", flagsPath+"/wide?dryRun=true", small)
	if res.status != http.StatusOK {
		t.Fatalf("PUT of a small nested spec = %d %.300s", res.status, res.body)
	}
	var out struct {
		Result struct {
			Changes []struct{ Diff string }
		}
	}
	if err := json.Unmarshal(res.body, &out); err != nil || len(out.Result.Changes) != 1 || !strings.Contains(out.Result.Changes[0].Diff, "+") {
		t.Fatalf("dry run answered %v %.300s, want one change with its diff", err, res.body)
	}
}

func TestNewRefusesBadLimits(t *testing.T) {
	t.Parallel()
	types := demoTypes(t)
	ls, err := memsource.Open(map[string][]byte{"x": []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []server.Option{server.WithMaxJSONDepth(1), server.WithMaxJSONDepth(513), server.WithMaxResourceBytes(-1), server.WithMaxRequestBytes(-1), server.WithCacheBytes(-1)} {
		if _, err := server.New(ls, types, o); err == nil {
			t.Errorf("New accepted a bad limit")
		}
	}
	if _, err := server.New(ls, types, server.WithMaxJSONDepth(512)); err != nil {
		t.Fatal(err)
	}
	// Zero keeps each default, for the limits that cannot be lifted too.
	if _, err := server.New(ls, types, server.WithMaxJSONDepth(0), server.WithMaxResourceBytes(0),
		server.WithMaxRequestBytes(0), server.WithCacheBytes(0)); err != nil {
		t.Fatalf("New with zero limits = %v, want the defaults", err)
	}
}

// TestErrorsRepeatLittleOfTheRequest: a spec of 50,000 keys the schema does
// not allow was answered with every key quoted, 3 MB for a 4 MB body.
func TestErrorsRepeatLittleOfTheRequest(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var b strings.Builder
	b.WriteString(`{"spec":{"enabled":true`)
	for i := range 50000 {
		fmt.Fprintf(&b, `,"k%07d":"v"`, i)
	}
	b.WriteString("}}")
	res := f.do(t, "PUT", flagsPath+"/wide?dryRun=true", b.String())
	if res.status != http.StatusBadRequest || len(res.body) > 4<<10 || !strings.Contains(string(res.body), "additionalProperties") {
		t.Fatalf("PUT of 50,000 unknown keys = %d with %d bytes (%.200s), want 400 in at most 4 KiB", res.status, len(res.body), res.body)
	}
}

// TestRESTSpecsKeepTheirNumbers: the REST form carries the spec as the JSON
// the caller sent, so no number passes through a float64: one that the
// type's YAML files can hold is stored exactly, one they cannot is refused,
// never rounded.
func TestRESTSpecsKeepTheirNumbers(t *testing.T) {
	t.Parallel()
	f := newPermissiveFixture(t)
	body := `{"spec":{"enabled":true,"odd":9007199254740993,"min":-9223372036854775808}}`
	if res := f.do(t, "PUT", flagsPath+"/exact", body); res.status != http.StatusAccepted {
		t.Fatalf("PUT = %d %.300s", res.status, res.body)
	}
	res := f.do(t, "GET", flagsPath+"/exact", "")
	for _, n := range []string{"9007199254740993", "-9223372036854775808"} {
		if !strings.Contains(string(res.body), n) {
			t.Errorf("GET = %s, lost %s", res.body, n)
		}
	}
	for i, n := range []string{"12345678901234567890", "123456789012345678901234567890", "1e-400", "0.1000000000000000055511151231257827"} {
		name := fmt.Sprintf("/inexact-%d", i)
		res := f.do(t, "PUT", flagsPath+name, `{"spec":{"n":`+n+`}}`)
		switch res.status {
		case http.StatusBadRequest:
		case http.StatusAccepted:
			if got := f.do(t, "GET", flagsPath+name, ""); !strings.Contains(string(got.body), `"n":`+n+`}`) {
				t.Errorf("PUT of %s was accepted, and GET answers %s", n, got.body)
			}
		default:
			t.Errorf("PUT of %s = %d %.300s, want it stored exactly or refused", n, res.status, res.body)
		}
	}
}
