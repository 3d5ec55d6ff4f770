package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cup-dev/cup/internal/cupdproc"
)

// TestRun runs every attack at a tiny scale against a real cupd and checks
// that the table is produced and that cupd answered. It reports, as the
// command does: an attack that breaks cupd does not fail it.
func TestRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a real cupd")
	}
	dir := t.TempDir()
	bin, err := cupdproc.Build(t.Context(), dir, false, t.Output())
	if err != nil {
		t.Fatal(err)
	}
	o := &options{
		cupd: bin, attacks: attackNames(), scale: 0.001, rssCap: 768 << 20,
		attackTimeout: 20 * time.Second, trickleBound: time.Second, tmp: dir,
		// Bodies of 1 MiB for bigbody: a quarter of the time.
		cupdArgs: []string{"--max-request-bytes", "1048576"},
	}
	var out bytes.Buffer
	results, err := run(t.Context(), o, &out)
	t.Logf("output:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != len(attacks) {
		t.Fatalf("%d results, want one per attack (%d)", len(results), len(attacks))
	}
	table := out.String()
	if !strings.Contains(table, "attack  ") || !strings.Contains(table, "peak RSS") {
		t.Errorf("no table header in the output")
	}
	statuses, healthz := 0, 0
	for _, r := range results {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(r.name) + `\s+\d+\s`).MatchString(table) {
			t.Errorf("no row for %s in the table", r.name)
		}
		if r.sent == 0 {
			t.Errorf("%s sent no request", r.name)
		}
		if r.peak <= 0 {
			t.Errorf("%s: no peak RSS", r.name)
		}
		for k, n := range r.answers {
			if regexp.MustCompile(`^\d{3}$`).MatchString(k) {
				statuses += n
			}
		}
		healthz += r.healthz.succeeded()
	}
	if statuses == 0 {
		t.Error("cupd answered no attack request with a status")
	}
	if healthz == 0 {
		t.Error("cupd answered no /healthz probe")
	}
}

func TestSelectAttacks(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"all":                      strings.Join(attackNames(), ","),
		"bigbody,nesting":          "nesting,bigbody,bigbody-connect",
		"bigbody-connect":          "bigbody-connect",
		"slowloris":                "slowloris-idle,slowloris-trickle,slowloris-hooks",
		"slowloris-idle,slowloris": "slowloris-idle,slowloris-trickle,slowloris-hooks",
	} {
		got, err := selectAttacks(in)
		if err != nil || strings.Join(got, ",") != want {
			t.Errorf("selectAttacks(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	if _, err := selectAttacks("nope"); err == nil {
		t.Error("selectAttacks of an unknown attack succeeded")
	}
}

func TestFormatCounts(t *testing.T) {
	t.Parallel()
	got := formatCounts(map[string]int{"closed": 2, "413": 1, "200": 5, "timeout": 1})
	if want := "200×5 413×1 closed×2 timeout×1"; got != want {
		t.Errorf("formatCounts = %q, want %q", got, want)
	}
}

func TestMaxRequestBytes(t *testing.T) {
	t.Parallel()
	for args, want := range map[string]int64{
		"serve":                                             4 << 20,
		"serve --max-request-bytes 1000":                    1000,
		"serve --max-request-bytes=2000 --x y":              2000,
		"serve --max-request-bytes=1 --max-request-bytes 3": 3,
	} {
		if got := maxRequestBytes(strings.Fields(args)); got != want {
			t.Errorf("maxRequestBytes(%q) = %d, want %d", args, got, want)
		}
	}
}
