package git

import (
	"bufio"
	"io"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/cup-dev/cup/internal/gitfs"
)

// holdingStorer is the storage a fetch that goes through go-git's pack
// parser writes to. The parser stores each object as it reads it, before
// it has the whole pack, and go-git fetches only the remote's branch tips
// that the storage does not have: a fetch cut short (the network, a full
// disk, a kill) after it stored a tip commit but not all of its trees and
// blobs would leave that commit in the storage, and the next fetch would
// not ask for it again, but point the branch at it with files missing.
//
// So the holdingStorer keeps commits and annotated tags in memory (serving
// them to the parser, which may need them as delta bases) and writes them
// only when the fetch updates its first reference, after the whole pack
// was stored: parents before children, so that a commit in the storage
// always comes with everything it reaches. A fetch that fails before that
// leaves no commit behind, and the next one asks for the tips again.
type holdingStorer struct {
	*lockedStorer
	held  map[plumbing.Hash]plumbing.EncodedObject
	order []plumbing.Hash // as received
}

func newHoldingStorer(l *lockedStorer) *holdingStorer {
	return &holdingStorer{lockedStorer: l, held: make(map[plumbing.Hash]plumbing.EncodedObject)}
}

func (h *holdingStorer) SetEncodedObject(o plumbing.EncodedObject) (plumbing.Hash, error) {
	if t := o.Type(); t != plumbing.CommitObject && t != plumbing.TagObject {
		return h.lockedStorer.SetEncodedObject(o)
	}
	id := o.Hash()
	if _, ok := h.held[id]; !ok {
		h.held[id] = o
		h.order = append(h.order, id)
	}
	return id, nil
}

func (h *holdingStorer) EncodedObject(t plumbing.ObjectType, id plumbing.Hash) (plumbing.EncodedObject, error) {
	if o, ok := h.held[id]; ok {
		if t != plumbing.AnyObject && t != o.Type() {
			return nil, plumbing.ErrObjectNotFound
		}
		return o, nil
	}
	return h.lockedStorer.EncodedObject(t, id)
}

func (h *holdingStorer) HasEncodedObject(id plumbing.Hash) error {
	if _, ok := h.held[id]; ok {
		return nil
	}
	return h.lockedStorer.HasEncodedObject(id)
}

func (h *holdingStorer) EncodedObjectSize(id plumbing.Hash) (int64, error) {
	if o, ok := h.held[id]; ok {
		return o.Size(), nil
	}
	return h.lockedStorer.EncodedObjectSize(id)
}

func (h *holdingStorer) SetReference(r *plumbing.Reference) error {
	if err := h.flush(); err != nil {
		return err
	}
	return h.lockedStorer.SetReference(r)
}

func (h *holdingStorer) CheckAndSetReference(new, old *plumbing.Reference) error {
	if err := h.flush(); err != nil {
		return err
	}
	return h.lockedStorer.CheckAndSetReference(new, old)
}

func (h *holdingStorer) RemoveReference(n plumbing.ReferenceName) error {
	if err := h.flush(); err != nil {
		return err
	}
	return h.lockedStorer.RemoveReference(n)
}

// flush writes the held objects, each after the held objects it names
// (a commit's parents, a tag's object).
func (h *holdingStorer) flush() error {
	if len(h.held) == 0 {
		return nil
	}
	done := make(map[plumbing.Hash]bool, len(h.held))
	var write func(id plumbing.Hash) error
	write = func(id plumbing.Hash) error {
		o, ok := h.held[id]
		if !ok || done[id] {
			return nil
		}
		done[id] = true
		deps, err := names(o)
		if err != nil {
			return err
		}
		for _, d := range deps {
			if err := write(d); err != nil {
				return err
			}
		}
		_, err = h.lockedStorer.SetEncodedObject(o)
		return err
	}
	for _, id := range h.order {
		if err := write(id); err != nil {
			return err
		}
	}
	clear(h.held)
	h.order = h.order[:0]
	return nil
}

// names returns the objects a commit's header names as parents, or the
// object a tag names.
func names(o plumbing.EncodedObject) ([]plumbing.Hash, error) {
	r, err := o.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	field := "parent "
	if o.Type() == plumbing.TagObject {
		field = "object "
	}
	var out []plumbing.Hash
	sc := bufio.NewScanner(io.LimitReader(r, 1<<20))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			break // end of the header
		}
		if v, ok := strings.CutPrefix(line, field); ok {
			if id, ok := gitfs.ParseHash(v); ok {
				out = append(out, id)
			}
		}
	}
	// A scanning error comes after the parents, which follow the first
	// line: what was found is all there is to find.
	return out, nil
}
