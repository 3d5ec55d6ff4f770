package server

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/cup-dev/cup/controller"
	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/source"
)

// writeTarget is what put and delete have in common.
type writeTarget struct {
	t                *Type
	namespace, name  string
	precondition     string
	revision         string
	changeSet        string
	idempotencyKey   string
	message          string
	dryRun           bool
	defaultVerb      string
	resourceForWrite *controller.Resource // nil for delete
	// create refuses a put of a resource that exists (AlreadyExists).
	create bool
	// ignoreNotFound makes a delete of a missing resource change nothing
	// instead of failing with NotFound.
	ignoreNotFound bool
	requester      string // the authenticated caller; empty without a policy
	// stored is resourceForWrite as the controller reads it back after
	// writing it, set by a put's Apply.
	stored *controller.Resource
	// changed says that the write changed the resource, and created that
	// a put made one that was not there; set by change.
	changed, created bool
	// patch, for a patch, makes resourceForWrite from the current resource
	// inside the update's Apply: from the very resource the precondition
	// is checked against, and again from a newer one when a concurrent
	// write moves the branch, so that no write between read and write is
	// lost.
	patch *patchOp
}

// fingerprint identifies what a write does, for idempotency keys: the
// lowercase hex SHA-256 of, in this order, "cup.write.v1", the operation
// ("put", "patch" or "delete"), group, version, plural, namespace, name,
// revision, change set, resourceVersion precondition, message as requested,
// for a put the resource's canonical JSON file form (controller.Resource.MarshalFile
// of the resource as the server stores it: defaults filled in, keys in a
// fixed order, no resourceVersion), and for a patch its type and compacted
// text (patchOp.fingerprint) — each as a big-endian uint64 length followed
// by its bytes. Dry runs and the key itself are not part of it. So a retry
// matches over any protocol, whatever the JSON's spacing or key order, and
// a different request with the same key does not. A patch is fingerprinted
// by what it says rather than by the resource it makes, which depends on
// the resource it applies to: a retry after the first patch was written
// replays it instead of failing or applying it twice.
func (w *writeTarget) fingerprint() (string, error) {
	op, body := "delete", []byte(nil)
	switch {
	case w.patch != nil:
		op, body = "patch", w.patch.fingerprint()
	case w.resourceForWrite != nil:
		op = "put"
		var err error
		if body, err = w.resourceForWrite.MarshalFile(); err != nil {
			return "", err
		}
	}
	h := sha256.New()
	var n [8]byte
	fields := [][]byte{
		[]byte("cup.write.v1"), []byte(op),
		[]byte(w.t.Group), []byte(w.t.Version), []byte(w.t.Plural), []byte(w.namespace), []byte(w.name),
		[]byte(w.revision), []byte(w.changeSet), []byte(w.precondition), []byte(w.message), body,
	}
	if w.requester != "" {
		fields = append(fields, []byte(w.requester))
	}
	for _, f := range fields {
		binary.BigEndian.PutUint64(n[:], uint64(len(f)))
		h.Write(n[:])
		h.Write(f)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
func (s *Server) write(ctx context.Context, w *writeTarget) (*cupv1alpha1.WriteResult, error) {
	rec := recordWrite(ctx, w)
	msg := w.message
	if msg == "" {
		msg = fmt.Sprintf("%s %s %s/%s\n\n%s/%s %s", w.defaultVerb, w.t.Kind, w.namespace, w.name,
			w.t.Group, w.t.Version, w.t.Plural)
	}
	return s.commit(ctx, &update{opts: w, items: []*writeTarget{w}, message: msg, fingerprint: w.fingerprint, rec: rec})
}

// update is one commit of writes: a put or a delete, or the items of an
// Apply batch.
type update struct {
	// opts holds what the whole update asks: revision, change set,
	// idempotency key, dry run and requester. For a put or delete it is
	// the write itself.
	opts *writeTarget
	// items are the writes, applied in order.
	items   []*writeTarget
	message string
	// fingerprint identifies the request, for its idempotency key.
	fingerprint func() (string, error)
	// rec is what the call's log line tells; nil outside a call.
	rec *writeRecord
	// itemErr, when set, says which item an error of the change is about.
	itemErr func(i int, err error) error
}

// commit writes u as one commit (or proposal, or dry run): it takes a
// write slot, applies every item on the base the source gives, and tells
// watches and reconcilers about the new commit.
func (s *Server) commit(ctx context.Context, u *update) (result *cupv1alpha1.WriteResult, err error) {
	obs := s.startWrite()
	defer func() { obs.end(result, err) }()
	rec := u.rec
	if rec == nil {
		rec = new(writeRecord)
	}
	w := u.opts
	// Everything that costs in proportion to the resources happens under
	// a write slot, so --max-concurrent-writes bounds it.
	release, err := s.writes.acquire()
	if err != nil {
		return nil, err
	}
	defer release()
	// A dry run records nothing, so its key has nothing to find or to keep.
	var key, fingerprint string
	if w.idempotencyKey != "" && !w.dryRun {
		if fingerprint, err = u.fingerprint(); err != nil {
			return nil, err
		}
		key = w.idempotencyKey
	}
	refs := make([]source.ResourceRef, len(u.items))
	for i, it := range u.items {
		refs[i] = source.ResourceRef{
			Group: it.t.Group, Version: it.t.Version, Kind: it.t.Kind, Plural: it.t.Plural,
			Namespace: it.namespace, Name: it.name,
		}
	}
	res, err := s.src.Update(ctx, &source.UpdateRequest{
		Revision:       w.revision,
		ChangeSet:      w.changeSet,
		OverrideOwner:  w.changeSet != "" && w.requester != "" && s.allowed(ctx, changeSetAttributes(w.changeSet)),
		IdempotencyKey: key,
		Fingerprint:    fingerprint,
		Message:        u.message,
		DryRun:         w.dryRun,
		Requester:      w.requester,
		Resources:      refs,
		Apply: func(ctx context.Context, base *source.Snapshot, fs source.Writer) error {
			obs.beginChange()
			for i, it := range u.items {
				if err := ctx.Err(); err != nil {
					return err
				}
				if err := s.change(ctx, base, fs, it); err != nil {
					if u.itemErr != nil {
						return u.itemErr(i, err)
					}
					return err
				}
			}
			return nil
		},
	})
	if err != nil {
		return nil, w.explain(err)
	}
	if res.Commit != "" && !res.Replayed {
		s.hub.poke() // watches see the commit now, not at the next poll
		s.pokeReconcilers(w, res)
	}
	out := &cupv1alpha1.WriteResult{BaseCommit: res.Base, Commit: res.Commit, Branch: res.Branch, Replayed: res.Replayed}
	if res.Proposal != nil {
		out.Proposal = writtenProposal(res, s.targetBranch(w))
	}
	switch {
	case res.Unchanged:
		out.Outcome = cupv1alpha1.WriteOutcome_WRITE_OUTCOME_UNCHANGED
	case w.dryRun:
		out.Outcome = cupv1alpha1.WriteOutcome_WRITE_OUTCOME_DRY_RUN
	default:
		out.Outcome = cupv1alpha1.WriteOutcome_WRITE_OUTCOME_COMMITTED
	}
	rec.commit, rec.replayed = res.Commit, res.Replayed
	rec.outcome = strings.ToLower(strings.TrimPrefix(out.Outcome.String(), "WRITE_OUTCOME_"))
	// A file that may hold other resources may show them in its diff, to a
	// caller who may not read them: with a policy in force, such diffs are
	// left out.
	var shared *Type
	if s.cfg.authz != nil {
		for _, it := range u.items {
			if fpr, ok := it.t.Controller.(controller.FilePerResource); !ok || !fpr.FilePerResource() {
				shared = it.t
				break
			}
		}
	}
	for _, c := range res.Changes {
		diff := c.Diff
		if shared != nil && diff != "" {
			diff = fmt.Sprintf("diff of %s omitted: the %s controller may keep other resources in it, which a diff would show to callers who may not read them\n", c.Path, shared.Kind)
		}
		out.Changes = append(out.Changes, &cupv1alpha1.FileChange{Path: c.Path, Operation: fileOp(c.Op), Diff: diff})
	}
	return out, nil
}

// change makes the write w through fs, on base: it reads the resource at
// base, checks w's preconditions against it, and puts or deletes it
// through the controller. It sets w.stored (for a put) and w.changed.
func (s *Server) change(ctx context.Context, base *source.Snapshot, fs source.Writer, w *writeTarget) error {
	w.stored, w.changed, w.created = nil, false, false
	if w.patch != nil {
		w.resourceForWrite = nil // made anew from each base
	}
	cur, err := s.getEntry(ctx, w.t, base, w.namespace, w.name)
	var unread *changeCounter // set when the write goes on without having read the resource
	switch {
	case err == nil:
	case errors.Is(err, controller.ErrNotFound):
		if w.resourceForWrite == nil {
			if w.ignoreNotFound {
				return nil
			}
			return err // delete of a missing resource
		}
		if w.precondition != "" {
			return &sentinelError{errPreconditionFailed, fmt.Sprintf(
				"precondition failed: %s %q does not exist, but resource_version %q was required",
				w.t.Singular, w.name, w.precondition)}
		}
	case errors.Is(err, controller.ErrFailed) && w.precondition == "" && !w.create && w.patch == nil:
		// Controllers written for the original Cup fail (exit 1,
		// or print nothing) to get a missing resource. Without a
		// precondition the write needs nothing of the current
		// resource: it goes on as if it were absent, and a delete
		// that changes nothing answers NotFound. A create must know
		// that the resource is absent, and fails.
		s.cfg.logger.DebugContext(ctx, "writing without the current resource: the controller failed to get it",
			"kind", w.t.Kind, "namespace", w.namespace, "name", w.name, "error", err)
		unread = &changeCounter{Writer: fs}
		fs = unread
	default:
		return err
	}
	if cur != nil && w.create {
		return &sentinelError{errAlreadyExists, fmt.Sprintf(
			"%s %q already exists in namespace %q: a create never replaces a resource; apply it to replace it",
			w.t.Singular, w.name, w.namespace)}
	}
	if cur != nil && w.precondition != "" && cur.resourceVersion() != w.precondition {
		return &sentinelError{errPreconditionFailed, fmt.Sprintf(
			"precondition failed: %s %q has resource_version %q, not %q: read it again and retry",
			w.t.Singular, w.name, cur.resourceVersion(), w.precondition)}
	}
	if w.patch != nil {
		r, err := w.patch.apply(cur)
		if err != nil {
			return err
		}
		w.resourceForWrite = r
	}
	// Each controller call takes a slot of its own and gives it back
	// before the next: holding one while waiting for another could
	// deadlock.
	if w.resourceForWrite == nil {
		err := callControllerErr(ctx, s, func() error {
			return w.t.Controller.Delete(ctx, &controller.DeleteRequest{
				FS: fs, Type: w.t.Type, Namespace: w.namespace, Name: w.name,
			})
		})
		switch {
		case err != nil:
			return err
		case unread != nil && unread.changes == 0:
			if w.ignoreNotFound {
				return nil
			}
			return notFound(w.t, w.namespace, w.name)
		}
		w.changed = true
		return nil
	}
	if err := callControllerErr(ctx, s, func() error {
		return w.t.Controller.Put(ctx, &controller.PutRequest{FS: fs, Type: w.t.Type, Resource: w.resourceForWrite.Clone()})
	}); err != nil {
		return err
	}
	// A controller may store the resource in a form that reads back with
	// other spellings (YAML, escapes, numbers), and so with another
	// resourceVersion: answer with what a Get will return.
	stored, err := callController(ctx, s, func() (*controller.Resource, error) {
		return w.t.Controller.Get(ctx, &controller.GetRequest{FS: fs, Type: w.t.Type, Namespace: w.namespace, Name: w.name})
	})
	if err != nil {
		return fmt.Errorf("reading back what the controller wrote: %w", err)
	}
	w.stored = stored
	w.changed = true
	w.created = cur == nil && unread == nil
	if cur != nil {
		if v, err := stored.ContentVersion(); err == nil && v == cur.resourceVersion() {
			w.changed = false
		}
	}
	return nil
}

// changeCounter counts the files a controller writes or removes through
// it, for telling a delete that removed nothing.
type changeCounter struct {
	source.Writer
	changes int
}

func (c *changeCounter) WriteFile(name string, data []byte, perm fs.FileMode) error {
	c.changes++
	return c.Writer.WriteFile(name, data, perm)
}

func (c *changeCounter) Remove(name string) error {
	c.changes++
	return c.Writer.Remove(name)
}

// explain adds to the source's errors about change sets and idempotency
// keys what the caller sent and can do; the sentinels stay wrapped, for
// errors.go to map.
func (w *writeTarget) explain(err error) error {
	switch {
	case errors.Is(err, source.ErrChangeSetNotFound):
		return advise(err, "change set", w.changeSet,
			"name a branch that a write in branch mode returned (WriteResult.branch), or leave change_set empty to start a new one")
	case errors.Is(err, source.ErrIdempotencyKeyReused):
		return advise(err, "idempotency key", w.idempotencyKey, "use a new key for a new request")
	}
	// Whatever the SCM did not find while proposing the write, it was not
	// the resource the caller named.
	return notCallersNotFound(err)
}

// advise wraps err with what it is about (what "name") unless its message
// quotes name already, and with advice unless it says that already.
func advise(err error, what, name, advice string) error {
	msg := err.Error()
	if q := strconv.Quote(name); !strings.Contains(msg, q) {
		err = fmt.Errorf("%s %s: %w", what, q, err)
	}
	if !strings.Contains(msg, advice) {
		err = fmt.Errorf("%w: %s", err, advice)
	}
	return err
}

func fileOp(o source.Operation) cupv1alpha1.FileOperation {
	switch o {
	case source.OpCreate:
		return cupv1alpha1.FileOperation_FILE_OPERATION_CREATE
	case source.OpUpdate:
		return cupv1alpha1.FileOperation_FILE_OPERATION_UPDATE
	case source.OpDelete:
		return cupv1alpha1.FileOperation_FILE_OPERATION_DELETE
	default:
		return cupv1alpha1.FileOperation_FILE_OPERATION_UNSPECIFIED
	}
}
