package lru_test

import (
	"fmt"
	"testing"

	"github.com/cup-dev/cup/internal/lru"
)

// TestBoundCountsKeys: entries are dropped least recently used first once
// their sizes, keys and overhead pass the bound; a value larger than the
// bound is not stored; replacing a key does not count it twice.
func TestBoundCountsKeys(t *testing.T) {
	t.Parallel()
	c := lru.New[string](3 * (100 + 1 + 96)) // three entries of 100 bytes with one-byte keys
	for _, k := range []string{"a", "b", "c"} {
		c.Add(k, k, 100)
	}
	if c.Len() != 3 || c.Bytes() != 3*197 {
		t.Fatalf("%d entries, %d bytes; want 3, %d", c.Len(), c.Bytes(), 3*197)
	}
	c.Get("a") // b is now the least recently used
	c.Add("d", "d", 100)
	if _, ok := c.Get("b"); ok {
		t.Error("b was kept; the least recently used should go")
	}
	for _, k := range []string{"a", "c", "d"} {
		if v, ok := c.Get(k); !ok || v != k {
			t.Errorf("Get(%s) = %q, %v", k, v, ok)
		}
	}
	c.Add("d", "d2", 100)
	if c.Len() != 3 || c.Bytes() != 3*197 {
		t.Errorf("after replacing d: %d entries, %d bytes", c.Len(), c.Bytes())
	}
	c.Add("huge", "x", 10_000)
	if _, ok := c.Get("huge"); ok || c.Len() != 3 {
		t.Error("a value larger than the bound was stored")
	}
	long := fmt.Sprintf("%0600d", 0) // a key alone over the bound
	c.Add(long, "", 0)
	if _, ok := c.Get(long); ok {
		t.Error("a key larger than the bound was stored")
	}
}
