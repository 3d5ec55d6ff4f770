package gitfs

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// LooseBatch is the most loose objects PackLoose packs at once, as git
// maintenance's loose-objects task packs at most 50,000.
const LooseBatch = 50_000

// LooseBatchBytes bounds the content of the objects PackLoose packs at
// once: 50,000 trees of a directory of 10,000 files would be 22 GB.
const LooseBatchBytes = 1 << 30

// EstimateLoose estimates how many loose objects objectsDir holds the way
// git gc --auto does: the objects in its subdirectory 17, times 256. It
// reads one directory.
func EstimateLoose(objectsDir string) int {
	entries, _ := os.ReadDir(filepath.Join(objectsDir, "17"))
	n := 0
	for _, e := range entries {
		if _, ok := ParseHash("17" + e.Name()); ok {
			n++
		}
	}
	return n * 256
}

// LoosePacked says what PackLoose did.
type LoosePacked struct {
	Pack      string // the pack written, without .pack or .idx; "" when none was
	PackBytes int64
	Packed    int  // loose objects written into the pack
	Removed   int  // loose files removed: those packed, and those a pack held already
	Skipped   int  // left loose: not a loose object's header, or larger than MaxLooseToPack
	More      bool // more loose objects than the batch holds were found: call again
}

// ErrPackLooseBusy reports that another process is packing the loose
// objects of the same objects directory (its lock file, packLooseLock,
// exists and is recent).
var ErrPackLooseBusy = errors.New("another process is packing the loose objects")

// packLooseLock is the file a PackLoose holds in the objects directory, as
// git gc holds gc.pid: two processes packing the same loose objects would
// each write them into a pack of its own.
const packLooseLock = "cup-pack-loose.lock"

// staleLock is the age from which a PackLoose takes over a lock file, left
// by a process that was killed: git gc takes over a gc.pid after 12 hours;
// a batch is packed in seconds.
const staleLock = time.Hour

// lockLoose takes the lock on packing the loose objects of objectsDir, and
// returns its release.
func lockLoose(objectsDir string) (func(), error) {
	name := filepath.Join(objectsDir, packLooseLock)
	for range 2 {
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
		if err == nil {
			fmt.Fprintf(f, "%d\n", os.Getpid())
			f.Close()
			return func() { os.Remove(name) }, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		fi, err := os.Stat(name)
		if err == nil && time.Since(fi.ModTime()) < staleLock {
			return nil, fmt.Errorf("%w: %s exists", ErrPackLooseBusy, name)
		}
		os.Remove(name) // stale, or gone since: try again
	}
	return nil, fmt.Errorf("%w: %s exists", ErrPackLooseBusy, name)
}

// MaxLooseToPack is the size of the largest loose object PackLoose moves
// into a pack: it holds each object whole while it writes it. Larger ones
// stay loose for git gc, which streams them.
const MaxLooseToPack = 64 << 20

// PackLoose moves up to maxObjects loose objects of objectsDir (LooseBatch,
// as git does), and up to maxBytes of their content (but at least one
// object), into one new pack in objectsDir/pack, as git maintenance's
// loose-objects task does (git pack-objects, then git prune-packed), and
// removes their loose files; objs must read objectsDir. A loose object
// that a pack holds already is only removed.
//
// Commits go into the pack in the order they were made (parents first,
// then by committer time), each followed by the trees it added, so that
// each large tree follows the one its commit changed and is written as a
// small delta of it (see WithTreeDeltas): 1,700 lone writes to a directory
// of 10,000 files left 654 MB of loose objects (a stored 450 KB tree
// each), which pack into 1.9 MB. Blobs, tags and trees no loose commit
// holds follow.
//
// Loose files are removed only once the pack is in place and objs lists
// it, so every object stays readable throughout: a reader that misses a
// loose file lists the packs again, as git does. PackLoose removes no
// directory, so that it never races a writer that made one to write into.
// One call at a time packs an objects directory: a call while another
// process's runs returns ErrPackLooseBusy (see packLooseLock). When ctx is
// done, PackLoose stops, leaving the loose objects as they were.
func PackLoose(ctx context.Context, objectsDir string, objs *ObjectDir, maxObjects int, maxBytes int64) (LoosePacked, error) {
	var res LoosePacked
	unlock, err := lockLoose(objectsDir)
	if err != nil {
		return res, err
	}
	defer unlock()
	objs.Refresh() // packs written since they were listed hold objects too
	ids, more, err := listLoose(objectsDir, maxObjects)
	res.More = more
	if err != nil || len(ids) == 0 {
		return res, err
	}
	remove := func(h plumbing.Hash) {
		hex := h.String()
		if err := os.Remove(filepath.Join(objectsDir, hex[:2], hex[2:])); err == nil {
			res.Removed++
		}
	}
	o := looseOrder{ctx: ctx, read: objs.Read, trees: make(map[plumbing.Hash]struct{})}
	z := objs.inflater()
	defer objs.putInflater(z)
	var total int64 // content of the objects to pack
	for i, h := range ids {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return res, err
			}
		}
		if objs.pack(h) != "" {
			remove(h) // git prune-packed's part
			continue
		}
		typ, size, err := looseType(objectsDir, h, z)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue // gone since it was listed: packed or pruned by git gc
		case errors.Is(err, ErrCorrupt) || err == nil && size > MaxLooseToPack:
			res.Skipped++ // left loose, for git fsck to report or git gc to pack
			continue
		case err != nil:
			return res, err
		}
		if o.len() > 0 && total+size > maxBytes {
			res.More = true // the rest for the next call
			break
		}
		total += size
		if err := o.add(h, typ); err != nil {
			return res, err
		}
	}
	if o.len() == 0 {
		return res, nil
	}
	o.commits = parentsFirst(o.commits)
	n := o.len()
	if res.Pack, res.PackBytes, err = writePackFilesOf(filepath.Join(objectsDir, "pack"), n, o.next, WithTreeDeltas()); err != nil {
		return res, err
	}
	res.Packed = n
	objs.Refresh()
	for _, h := range o.written {
		remove(h)
	}
	return res, nil
}

// listLoose returns the ids of up to limit loose objects of objectsDir, and
// whether there are more.
func listLoose(objectsDir string, limit int) ([]plumbing.Hash, bool, error) {
	var ids []plumbing.Hash
	for i := range 256 {
		dir := fmt.Sprintf("%02x", i)
		entries, err := os.ReadDir(filepath.Join(objectsDir, dir))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, false, err
		}
		for _, e := range entries {
			h, ok := ParseHash(dir + e.Name())
			if !ok || !e.Type().IsRegular() {
				continue // a temporary file of a writer, or not Git's
			}
			if len(ids) == limit {
				return ids, true, nil
			}
			ids = append(ids, h)
		}
	}
	return ids, false, nil
}

// looseHeaderBytes is how much of a loose file looseType reads: enough for
// the header of a deflated stream whose first block has Huffman tables
// (at most about 300 bytes of them).
const looseHeaderBytes = 4 << 10

// looseType reads the type and size of loose object h from the start of
// its file. A header that does not decode from there is ErrCorrupt.
func looseType(objectsDir string, h plumbing.Hash, z *inflater) (plumbing.ObjectType, int64, error) {
	hex := h.String()
	name := filepath.Join(objectsDir, hex[:2], hex[2:])
	f, err := os.Open(name)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	var buf [looseHeaderBytes]byte
	n, err := io.ReadFull(f, buf[:])
	if err != nil && err != io.ErrUnexpectedEOF {
		return 0, 0, fmt.Errorf("read %s: %w", name, err)
	}
	typ, size, _, err := z.header(buf[:n])
	if err != nil {
		return 0, 0, fmt.Errorf("loose object %s: %w: %w", name, ErrCorrupt, err)
	}
	return typ, size, nil
}

// looseOrder gives loose objects in the order PackLoose packs them.
type looseOrder struct {
	ctx     context.Context // stops the packing when done
	read    func(plumbing.Hash) (plumbing.ObjectType, []byte, error)
	commits []looseCommit              // in the order parentsFirst gives them, once all are added
	trees   map[plumbing.Hash]struct{} // not given yet
	rest    []plumbing.Hash            // blobs and tags

	stack    []plumbing.Hash // trees of the commit being given
	ci, ri   int
	leftDone bool            // the trees no commit reached are on the stack
	written  []plumbing.Hash // given so far
}

// looseCommit is what ordering needs of a commit: its content is read
// again when it is given, so that what PackLoose holds stays small.
type looseCommit struct {
	id      plumbing.Hash
	tree    plumbing.Hash
	parents []plumbing.Hash
	time    int64
}

// add sorts object h of type typ into its place.
func (o *looseOrder) add(h plumbing.Hash, typ plumbing.ObjectType) error {
	switch typ {
	case plumbing.CommitObject:
		_, data, err := o.read(h)
		if err != nil {
			return err
		}
		tree, err := parseCommitTree(data)
		if err != nil {
			return fmt.Errorf("commit %s: %w: %w", h, ErrCorrupt, err)
		}
		parents, time := commitParentsTime(data)
		o.commits = append(o.commits, looseCommit{id: h, tree: tree, parents: parents, time: time})
	case plumbing.TreeObject:
		o.trees[h] = struct{}{}
	default:
		o.rest = append(o.rest, h)
	}
	return nil
}

func (o *looseOrder) len() int { return len(o.commits) + len(o.trees) + len(o.rest) }

// next gives the next object: each commit, oldest first, then the trees
// below it that no commit before it gave; then trees left, then the rest.
func (o *looseOrder) next() (plumbing.Hash, plumbing.ObjectType, []byte, error) {
	if err := o.ctx.Err(); err != nil {
		return plumbing.ZeroHash, 0, nil, err
	}
	for len(o.stack) > 0 {
		h := o.stack[len(o.stack)-1]
		o.stack = o.stack[:len(o.stack)-1]
		if _, ok := o.trees[h]; !ok {
			continue // not loose, or given already
		}
		delete(o.trees, h)
		typ, data, err := o.read(h)
		if err != nil {
			return h, 0, nil, err
		}
		if typ != plumbing.TreeObject {
			return h, 0, nil, fmt.Errorf("%w: loose object %s is a %s, not a tree", ErrCorrupt, h, typ)
		}
		o.stack = appendSubtrees(o.stack, data)
		return o.give(h, typ, data)
	}
	if o.ci < len(o.commits) {
		c := o.commits[o.ci]
		o.ci++
		typ, data, err := o.read(c.id)
		if err != nil {
			return c.id, 0, nil, err
		}
		o.stack = append(o.stack, c.tree)
		return o.give(c.id, typ, data)
	}
	if !o.leftDone {
		o.leftDone = true
		o.stack = slices.SortedFunc(maps.Keys(o.trees), func(a, b plumbing.Hash) int { return bytes.Compare(b[:], a[:]) })
		if len(o.stack) > 0 {
			return o.next()
		}
	}
	if o.ri >= len(o.rest) {
		return plumbing.ZeroHash, 0, nil, errors.New("no more loose objects")
	}
	h := o.rest[o.ri]
	o.ri++
	typ, data, err := o.read(h)
	if err != nil {
		return h, 0, nil, err
	}
	return o.give(h, typ, data)
}

func (o *looseOrder) give(h plumbing.Hash, typ plumbing.ObjectType, data []byte) (plumbing.Hash, plumbing.ObjectType, []byte, error) {
	o.written = append(o.written, h)
	return h, typ, data, nil
}

// appendSubtrees appends to stack the ids of the trees tree data holds, in
// reverse order, so that popping gives them in order. A malformed tree adds
// what it holds up to the fault: its packing does not depend on them.
func appendSubtrees(stack []plumbing.Hash, data []byte) []plumbing.Hash {
	start := len(stack)
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		if sp <= 0 {
			break
		}
		dir := string(data[:sp]) == "40000"
		data = data[sp+1:]
		nul := bytes.IndexByte(data, 0)
		if nul < 0 || len(data) < nul+1+len(plumbing.ZeroHash) {
			break
		}
		if dir {
			stack = append(stack, plumbing.Hash(data[nul+1:nul+1+len(plumbing.ZeroHash)]))
		}
		data = data[nul+1+len(plumbing.ZeroHash):]
	}
	slices.Reverse(stack[start:])
	return stack
}

// parentsFirst orders commits so that each comes after those of its
// parents that are among them, and otherwise by committer time: the order
// they were made in. Committer times alone do not tell apart the hundreds
// of commits a busy server makes in one second.
func parentsFirst(commits []looseCommit) []looseCommit {
	slices.SortFunc(commits, func(a, b looseCommit) int {
		return cmp.Or(cmp.Compare(a.time, b.time), bytes.Compare(a.id[:], b.id[:]))
	})
	at := make(map[plumbing.Hash]int, len(commits))
	for i, c := range commits {
		at[c.id] = i
	}
	out := make([]looseCommit, 0, len(commits))
	seen := make([]bool, len(commits))
	type frame struct{ i, parent int }
	var stack []frame // iterative: a history of loose commits may be long
	for i := range commits {
		if seen[i] {
			continue
		}
		seen[i] = true
		stack = append(stack[:0], frame{i: i})
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			c := &commits[f.i]
			if f.parent < len(c.parents) {
				p := c.parents[f.parent]
				f.parent++
				if j, ok := at[p]; ok && !seen[j] {
					seen[j] = true
					stack = append(stack, frame{i: j})
				}
				continue
			}
			out = append(out, *c)
			stack = stack[:len(stack)-1]
		}
	}
	return out
}

// commitParentsTime returns the parents and the committer time (0 when
// unreadable) of a commit object.
func commitParentsTime(data []byte) (parents []plumbing.Hash, time int64) {
	for len(data) > 0 {
		var line []byte
		line, data, _ = bytes.Cut(data, []byte{'\n'})
		if len(line) == 0 {
			break // end of headers
		}
		if v, ok := bytes.CutPrefix(line, []byte("parent ")); ok {
			if h, err := parseHex(v); err == nil {
				parents = append(parents, h)
			}
		} else if v, ok := bytes.CutPrefix(line, []byte("committer ")); ok {
			// "Name <email> 1700000000 +0000"
			if gt := bytes.LastIndexByte(v, '>'); gt >= 0 {
				if fields := bytes.Fields(v[gt+1:]); len(fields) > 0 {
					time, _ = strconv.ParseInt(string(fields[0]), 10, 64)
				}
			}
		}
	}
	return parents, time
}
