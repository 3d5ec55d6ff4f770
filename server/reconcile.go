package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/runtime"
	"github.com/cup-dev/cup/source"
)

// ReconcileStore returns the server as the reconciler runtime reads and
// writes it: the served branch's head, every resource of a type at a
// commit (through the memoised listings), and writes of outputs through
// the source's write path, one commit per batch, with the controllers'
// Put and Delete.
func (s *Server) ReconcileStore() runtime.Store { return reconcileStore{s} }

type reconcileStore struct{ s *Server }

func (rs reconcileStore) Head(ctx context.Context) (string, error) {
	snap, err := rs.s.src.View(ctx, "")
	if err != nil {
		return "", err
	}
	return snap.Commit, nil
}

func (rs reconcileStore) CommitTime(ctx context.Context, commit string) (time.Time, error) {
	h, err := rs.s.historyOf()
	if err != nil {
		return time.Time{}, err
	}
	c, err := h.Commit(ctx, commit)
	if err != nil {
		return time.Time{}, err
	}
	return c.Committer.When, nil
}

func (rs reconcileStore) List(ctx context.Context, commit string, ct controller.Type, namespaces []string) ([]*controller.Resource, error) {
	s := rs.s
	t, err := s.lookup(ct.Group, ct.Version, ct.Plural)
	if err != nil {
		return nil, err
	}
	snap, err := s.src.View(ctx, commit)
	if err != nil {
		return nil, err
	}
	if namespaces == nil {
		if namespaces, err = s.namespacesAt(ctx, t, snap); errors.Is(err, errNoNamespaces) {
			return nil, fmt.Errorf("%w: %w", runtime.ErrNamespacesUnknown, err)
		} else if err != nil {
			return nil, err
		}
	}
	var out []*controller.Resource
	for _, ns := range namespaces {
		l, err := s.listEntries(ctx, t, snap, ns)
		if err != nil {
			return nil, err
		}
		for _, e := range l.items {
			r, err := controller.ParseResource(e.json)
			if err != nil {
				return nil, fmt.Errorf("%s %s/%s: %w", t.Kind, ns, e.name, err)
			}
			out = append(out, r)
		}
	}
	return out, nil
}

// Write commits a reconciler's changes. In direct mode, and when they
// join another writer's change set, the base must still be the head of
// the branch or change set: the outputs were computed from its inputs.
func (rs reconcileStore) Write(ctx context.Context, req *runtime.WriteRequest) (*runtime.WriteResult, error) {
	s := rs.s
	release, err := s.writes.acquire()
	if err != nil {
		return nil, err
	}
	defer release()
	types := make([]*Type, len(req.Changes))
	refs := make([]source.ResourceRef, len(req.Changes))
	for i, c := range req.Changes {
		t, err := s.lookup(c.Type.Group, c.Type.Version, c.Type.Plural)
		if err != nil {
			return nil, err
		}
		types[i] = t
		refs[i] = source.ResourceRef{Group: t.Group, Version: t.Version, Kind: t.Kind, Plural: t.Plural, Namespace: c.Namespace, Name: c.Name}
	}
	res, err := s.src.Update(ctx, &source.UpdateRequest{
		ChangeSet: req.ChangeSet,
		Message:   req.Message,
		Requester: "reconciler:" + req.Reconciler,
		// Outputs that join a proposal go into it, whoever opened it: the
		// change they derive from is in it.
		OverrideOwner: req.Join,
		Resources:     refs,
		Apply: func(ctx context.Context, base *source.Snapshot, fs source.Writer) error {
			if (req.Mode == runtime.WriteDirect || req.Join) && base.Commit != req.Base {
				return &runtime.StaleError{Base: req.Base, Head: base.Commit}
			}
			for i, c := range req.Changes {
				t := types[i]
				if c.Resource == nil {
					err := callControllerErr(ctx, s, func() error {
						return t.Controller.Delete(ctx, &controller.DeleteRequest{FS: fs, Type: t.Type, Namespace: c.Namespace, Name: c.Name})
					})
					if err != nil && !errors.Is(err, controller.ErrNotFound) {
						return fmt.Errorf("deleting %s %s/%s: %w", t.Kind, c.Namespace, c.Name, err)
					}
					continue
				}
				// An output is checked as a put through the API is:
				// names, size, and the type's schema.
				r, err := s.checkResource(t, ref{group: t.Group, version: t.Version, plural: t.Plural, namespace: c.Namespace, name: c.Name},
					&putInput{resource: *c.Resource.Clone(), specField: "spec"})
				if err != nil {
					return fmt.Errorf("output %s %s/%s: %w", t.Kind, c.Namespace, c.Name, err)
				}
				if err := callControllerErr(ctx, s, func() error {
					return t.Controller.Put(ctx, &controller.PutRequest{FS: fs, Type: t.Type, Resource: r})
				}); err != nil {
					return fmt.Errorf("writing %s %s/%s: %w", t.Kind, c.Namespace, c.Name, err)
				}
			}
			return nil
		},
	})
	switch {
	case errors.Is(err, source.ErrChangeSetNotFound):
		return nil, fmt.Errorf("%w: %w", runtime.ErrChangeSetGone, err)
	case err != nil:
		return nil, err
	}
	if res.Commit != "" {
		s.hub.poke()
	}
	out := &runtime.WriteResult{Commit: res.Commit}
	if req.Mode == runtime.WriteProposal || req.ChangeSet != "" {
		// A direct write's branch is the served one, not a change set
		// for the next write to add to.
		out.ChangeSet = res.Branch
	}
	return out, nil
}

// maxLayerFileBytes bounds a file ResourceFile reads: a resource's file
// is at most a resource's size, with room for the files that hold
// several.
const maxLayerFileBytes = 4 << 20

// ResourceFile returns the repository file that holds a resource at
// commit, and its content, for transforms that report positions in it
// (the CUE transform's conflicts). It fails with an error wrapping
// errors.ErrUnsupported when the type's controller cannot say which file
// that is.
func (rs reconcileStore) ResourceFile(ctx context.Context, commit string, ct controller.Type, namespace, name string) (string, []byte, error) {
	s := rs.s
	t, err := s.lookup(ct.Group, ct.Version, ct.Plural)
	if err != nil {
		return "", nil, err
	}
	pm, ok := t.Controller.(controller.PathMapper)
	if !ok {
		return "", nil, fmt.Errorf("%s: %w: its controller does not map resources to files", t.Kind, errors.ErrUnsupported)
	}
	p, err := pm.ResourcePath(t.Type, namespace, name)
	if err != nil {
		return "", nil, err
	}
	snap, err := s.src.View(ctx, commit)
	if err != nil {
		return "", nil, err
	}
	f, err := snap.FS.Open(p)
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxLayerFileBytes+1))
	if err != nil {
		return "", nil, err
	}
	if len(data) > maxLayerFileBytes {
		return "", nil, fmt.Errorf("%s: larger than %d bytes", p, maxLayerFileBytes)
	}
	return p, data, nil
}
