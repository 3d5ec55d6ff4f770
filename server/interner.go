package server

import (
	"hash/maphash"
	"maps"
	"slices"
	"sync"
	"weak"

	"github.com/cup-dev/cup/controller"
)

// interner shares entries between the commits that hold the same resource:
// after a write, listing the new commit re-encodes only what changed, and
// the listings of successive commits share memory. Resources are told
// apart by a 128-bit hash of their content. It holds entries weakly, so it
// keeps nothing alive that no cached listing or request uses.
//
// Controllers that are KeyedListers name each file's content (a Git blob
// id); the interner also remembers entries by that name, scoped by type and
// namespace, so listing a new commit decodes only the files it has not
// seen.
type interner struct {
	seeds [2]maphash.Seed
	mu    sync.Mutex
	m     map[contentKey]weak.Pointer[entry]
	// keyed and skips hold keyed keys by a 128-bit hash (interner.hash), as
	// m holds resources: a slot a third of one holding the key's strings,
	// and no copy of them.
	keyed map[contentKey]weak.Pointer[entry]
	// skips are keys whose files hold no resource of the type (kinds that
	// share a directory); the set is dropped whole when it grows large.
	skips map[contentKey]struct{}
	// sweepAt is how many slots m and keyed may hold before an insertion
	// first drops those whose entries are gone: twice what was left at the
	// last sweep, so a sweep costs a constant per insertion. A cleanup per
	// slot did this at once, but cost a record in the entry's span, which
	// the runtime keeps in a sorted list: a listing of 10,000 spent 20 ms
	// of CPU (of 290) walking those lists.
	sweepAt int
}

// minSweep is the least sweepAt.
const minSweep = 4096

// keyedKey is a controller's content key in the scope it is valid in.
type keyedKey struct {
	typ       *Type
	namespace string
	key       string
}

const maxSkips = 1 << 16

// hash is the 128-bit hash keyed and skips hold k by.
func (in *interner) hash(k keyedKey) contentKey {
	return contentKey{maphash.Comparable(in.seeds[0], k), maphash.Comparable(in.seeds[1], k)}
}

type contentKey [2]uint64

func newInterner() *interner {
	return &interner{
		seeds:   [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()},
		m:       make(map[contentKey]weak.Pointer[entry]),
		keyed:   make(map[contentKey]weak.Pointer[entry]),
		skips:   make(map[contentKey]struct{}),
		sweepAt: minSweep,
	}
}

// sweep drops the slots of collected entries once m and keyed hold
// sweepAt. in.mu is held.
func (in *interner) sweep() {
	if len(in.m)+len(in.keyed) < in.sweepAt {
		return
	}
	for _, m := range []map[contentKey]weak.Pointer[entry]{in.m, in.keyed} {
		maps.DeleteFunc(m, func(_ contentKey, wp weak.Pointer[entry]) bool { return wp.Value() == nil })
	}
	in.sweepAt = max(minSweep, 2*(len(in.m)+len(in.keyed)))
}

func (in *interner) key(r *controller.Resource) contentKey {
	var hs [2]maphash.Hash
	hs[0].SetSeed(in.seeds[0])
	hs[1].SetSeed(in.seeds[1])
	write := func(s string, sep byte) {
		for i := range hs {
			hs[i].WriteString(s)
			hs[i].WriteByte(sep)
		}
	}
	for _, s := range []string{r.APIVersion, r.Kind, r.Metadata.Namespace, r.Metadata.Name} {
		write(s, 0)
	}
	var keys [8]string
	for _, m := range []map[string]string{r.Metadata.Labels, r.Metadata.Annotations} {
		sorted := keys[:0]
		for k := range m {
			sorted = append(sorted, k)
		}
		slices.Sort(sorted)
		for _, k := range sorted {
			write(k, 0)
			write(m[k], 0)
		}
		write("", 1)
	}
	for i := range hs {
		hs[i].Write(r.Spec)
	}
	return contentKey{hs[0].Sum64(), hs[1].Sum64()}
}

// entry returns the shared entry for r, making it when there is none. The
// entry keeps no reference into r.
func (in *interner) entry(r *controller.Resource) (*entry, error) {
	e, _, err := in.entryRef(r)
	return e, err
}

// entryRef is entry, with the weak pointer the interner holds it by, for
// remember to hold it by too: making a weak pointer to an object that has
// one walks a list of the span's records (runtime.getWeakHandle), which
// cost a listing of 10,000 more than a millisecond.
func (in *interner) entryRef(r *controller.Resource) (*entry, weak.Pointer[entry], error) {
	k := in.key(r)
	in.mu.Lock()
	if wp := in.m[k]; wp.Value() != nil {
		in.mu.Unlock()
		return wp.Value(), wp, nil
	}
	in.mu.Unlock()
	e, err := newEntry(r)
	if err != nil {
		return nil, weak.Pointer[entry]{}, err
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if wp := in.m[k]; wp.Value() != nil {
		return wp.Value(), wp, nil
	}
	in.sweep()
	wp := weak.Make(e)
	in.m[k] = wp
	return e, wp, nil
}

// byKey returns the entry remembered under the hash h of a keyedKey
// (interner.hash), or whether that key holds no resource of the type;
// neither when it is unknown.
func (in *interner) byKey(h contentKey) (ie *entry, skip bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if _, skip := in.skips[h]; skip {
		return nil, true
	}
	return in.keyed[h].Value(), false
}

// remember records what the keyedKey hashed to h decoded to: the entry wp
// points to, or nothing of the type (the zero wp).
func (in *interner) remember(h contentKey, wp weak.Pointer[entry]) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if wp == (weak.Pointer[entry]{}) {
		if len(in.skips) >= maxSkips {
			clear(in.skips)
		}
		in.skips[h] = struct{}{}
		return
	}
	if in.keyed[h] == wp {
		return
	}
	in.sweep()
	in.keyed[h] = wp
}

// listing is every resource of one type in one namespace at one commit,
