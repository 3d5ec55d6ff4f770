package server

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/cup-dev/cup/controller"
)

// randomJSON writes a random compact JSON value of at most depth levels.
func randomJSON(rng *rand.Rand, b *strings.Builder, depth int) {
	switch k := rng.IntN(6); {
	case depth > 0 && k == 0:
		b.WriteByte('{')
		for i := range rng.IntN(4) {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Quote("k" + strconv.Itoa(i) + `"[{\`))
			b.WriteByte(':')
			randomJSON(rng, b, depth-1)
		}
		b.WriteByte('}')
	case depth > 0 && k == 1:
		b.WriteByte('[')
		for i := range rng.IntN(4) {
			if i > 0 {
				b.WriteByte(',')
			}
			randomJSON(rng, b, depth-1)
		}
		b.WriteByte(']')
	case k == 2:
		b.WriteString(strconv.Quote("s]}{,:" + strings.Repeat("x", rng.IntN(5))))
	default:
		b.WriteString(strconv.Itoa(rng.IntN(1000)))
	}
}

// TestFileSizeBoundsMarshalFile: the size checked before a write is never
// less than what MarshalFile then produces, and the spec's part of it is
// exact, so the limit is neither evaded nor much stricter than it says.
func TestFileSizeBoundsMarshalFile(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		var spec strings.Builder
		spec.WriteString(`{"a":`)
		randomJSON(rng, &spec, 8)
		spec.WriteString(`}`)
		r := &controller.Resource{
			APIVersion: "flags.cup.dev/v1alpha1", Kind: "Flag",
			Metadata: controller.Metadata{Namespace: "default", Name: "x", Labels: map[string]string{"a": `"<>&`}},
			Spec:     []byte(spec.String()),
		}
		file, err := r.MarshalFile()
		if err != nil {
			t.Fatal(err)
		}
		got := fileSize(r)
		if got < int64(len(file)) || got > int64(len(file))+256 {
			t.Fatalf("fileSize = %d, MarshalFile makes %d bytes, for spec %s", got, len(file), spec.String())
		}
	}
}
