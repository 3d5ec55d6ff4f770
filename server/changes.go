package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"

	"github.com/cup-dev/cup/controller"
	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
)

// changesWalk bounds the commits one page's last changes walk.
const changesWalk = 10_000

// lastChanges finds, for each listed resource of t at commit, the commit
// that last changed it (ListRequest.with_changes): one walk down the
// first-parent history from commit, diffing each commit with its first
// parent (source.History.ChangedPaths reads only what differs) until every
// resource's file has been seen to change, the root commit, or
// changesWalk commits. A merge commit is the change of what it merged, as
// History has it. A controller that maps resources to no files gets empty
// changes. The answer is memoised by commit and the page's resources.
func (s *Server) lastChanges(ctx context.Context, t *Type, commit string, items []*cupv1alpha1.Resource) ([]*cupv1alpha1.LastChange, error) {
	out := make([]*cupv1alpha1.LastChange, len(items))
	for i := range out {
		out[i] = &cupv1alpha1.LastChange{}
	}
	pm, ok := t.Controller.(controller.PathMapper)
	if !ok || len(items) == 0 {
		return out, nil
	}
	h, err := s.historyOf()
	if err != nil {
		return nil, err
	}
	paths := make([]string, len(items))
	key := sha256.New()
	for i, r := range items {
		md := r.GetMetadata()
		p, err := pm.ResourcePath(t.Type, md.GetNamespace(), md.GetName())
		switch {
		case err == nil:
		case errors.Is(err, controller.ErrUnsupported):
			return out, nil
		default:
			return nil, err
		}
		paths[i] = p
		key.Write([]byte(p))
		key.Write([]byte{0})
	}
	k := memoKey{commit: commit, typ: t, name: hex.EncodeToString(key.Sum(nil)), what: memoChanges}
	v, err := s.memo.do(ctx, k, func() (any, int64, error) {
		found := make(map[string]*cupv1alpha1.LastChange, len(paths))
		for _, p := range paths {
			found[p] = nil
		}
		left := len(found)
		for c, walked := commit, 0; c != "" && left > 0 && walked < changesWalk; walked++ {
			if err := ctx.Err(); err != nil {
				return nil, 0, err
			}
			ci, err := h.Commit(ctx, c)
			if err != nil {
				return nil, 0, err
			}
			parent := ""
			if len(ci.Parents) > 0 {
				parent = ci.Parents[0]
			}
			changed, err := h.ChangedPaths(ctx, parent, c)
			if err != nil {
				return nil, 0, err
			}
			var lc *cupv1alpha1.LastChange
			for _, p := range changed {
				if seen, ok := found[p]; ok && seen == nil {
					if lc == nil {
						lc = &cupv1alpha1.LastChange{Commit: ci.ID, Time: ci.Committer.When.UTC().Format(time.RFC3339)}
					}
					found[p] = lc
					left--
				}
			}
			c = parent
		}
		byPath := make([]*cupv1alpha1.LastChange, len(paths))
		n := int64(64)
		for i, p := range paths {
			byPath[i] = found[p]
			n += int64(len(p)) + 48
			if byPath[i] != nil {
				n += int64(len(byPath[i].Commit) + len(byPath[i].Time))
			}
		}
		return byPath, n, nil
	})
	if err != nil {
		return nil, err
	}
	for i, lc := range v.([]*cupv1alpha1.LastChange) {
		if lc != nil {
			out[i] = lc
		}
	}
	return out, nil
}
