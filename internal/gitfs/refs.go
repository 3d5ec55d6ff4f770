package gitfs

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/cup-dev/cup/source"
)

var (
	// ErrRefNotFound reports a reference that does not exist. It wraps
	// plumbing.ErrReferenceNotFound.
	ErrRefNotFound = fmt.Errorf("%w", plumbing.ErrReferenceNotFound)
	// ErrRefMoved reports a reference that did not hold the expected value
	// when it was to be updated.
	ErrRefMoved = errors.New("reference moved")
	// ErrRefLocked reports a reference whose lock file another writer held
	// for longer than the update waits.
	ErrRefLocked = errors.New("reference is locked")
)

// A file's metadata is not trusted to reveal a further change for a while
// after its last modification: file systems keep timestamps at a
// granularity between a nanosecond and two seconds, and a file rewritten
// within one tick with the same size and inode looks unchanged. Where
// timestamps have sub-second parts (ext4, XFS, Btrfs, tmpfs, APFS: the
// kernel's clock tick, at most 10 ms) the window is fineRacyWindow; where
// they do not (FAT, HFS+, ext3), coarseRacyWindow.
const (
	fineRacyWindow   = 100 * time.Millisecond
	coarseRacyWindow = 2 * time.Second
)

// lockTimeout is how long an update waits for another writer's lock file,
// like Git's core.filesRefLockTimeout.
const lockTimeout = time.Second

// Ref is the value of a reference: an object id or, for a symbolic
// reference, the name of its target.
type Ref struct {
	Hash   plumbing.Hash
	Target string
}

// Refs reads and updates the references of a repository on disk, in loose
// files and packed-refs, the way Git does.
//
// Reads are cached and revalidated on every call with a stat of the files
// involved, so a reference moved by another program is seen by the very
// next read while an unchanged one costs a stat or two. A file modified
// just before it was read (within 100 ms, or two seconds on file systems
// with whole-second timestamps) is read again each time, because its
// timestamp cannot yet tell a further change apart.
//
// Updates take Git's lock file (<ref>.lock), compare the current value with
// the expected one and rename the lock file over the reference, so they
// interoperate with git and every other implementation of that protocol.
// Refs is safe for concurrent use.
type Refs struct {
	gitDir    string // HEAD and other per-worktree references
	commonDir string // refs/ and packed-refs

	mu     sync.Mutex
	loose  map[string]*cachedRef
	packed *cachedPacked
}

type cachedRef struct {
	fi     fs.FileInfo
	stable bool
	ref    Ref
}

type cachedPacked struct {
	fi     fs.FileInfo
	stable bool
	refs   map[string]plumbing.Hash
}

// NewRefs returns the references of the repository whose Git directory is
// gitDir and whose common directory (where refs/ lives; the same as gitDir
// except for linked worktrees) is commonDir. It does no I/O.
func NewRefs(gitDir, commonDir string) *Refs {
	return &Refs{gitDir: gitDir, commonDir: commonDir, loose: make(map[string]*cachedRef)}
}

// ValidRefName reports whether name is a well-formed reference name that is
// safe to use as a path below the Git directory: "HEAD", or "refs/" followed
// by elements that git check-ref-format accepts.
func ValidRefName(name string) bool {
	if name == "HEAD" {
		return true
	}
	rest, ok := strings.CutPrefix(name, "refs/")
	if !ok || rest == "" || strings.Contains(name, "..") || strings.Contains(name, "@{") || strings.HasSuffix(name, ".") {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c < 0x20 || c == 0x7f || strings.IndexByte(" ~^:?*[\\", c) >= 0 {
			return false
		}
	}
	for elem := range strings.SplitSeq(rest, "/") {
		if elem == "" || elem[0] == '.' || strings.HasSuffix(elem, ".lock") {
			return false
		}
	}
	return true
}

func (r *Refs) path(name string) string {
	if strings.HasPrefix(name, "refs/") {
		return filepath.Join(r.commonDir, filepath.FromSlash(name))
	}
	return filepath.Join(r.gitDir, filepath.FromSlash(name))
}

// Read returns the value of the reference name without following symbolic
// references. A missing reference gives an error wrapping ErrRefNotFound.
func (r *Refs) Read(name string) (Ref, error) {
	if !ValidRefName(name) {
		return Ref{}, fmt.Errorf("invalid reference name %q", name)
	}
	ref, ok, err := r.readLoose(name)
	if err != nil || ok {
		return ref, err
	}
	if strings.HasPrefix(name, "refs/") {
		packed, err := r.readPacked()
		if err != nil {
			return Ref{}, err
		}
		if h, ok := packed[name]; ok {
			return Ref{Hash: h}, nil
		}
	}
	return Ref{}, fmt.Errorf("%s: %w", name, ErrRefNotFound)
}

// Resolve follows name through symbolic references and returns the object
// id it ends at and the name of the last reference.
func (r *Refs) Resolve(name string) (plumbing.Hash, string, error) {
	const maxDepth = 5
	for range maxDepth {
		ref, err := r.Read(name)
		if err != nil {
			return plumbing.ZeroHash, name, err
		}
		if ref.Target == "" {
			return ref.Hash, name, nil
		}
		name = ref.Target
	}
	return plumbing.ZeroHash, name, fmt.Errorf("%s: symbolic references nested too deep", name)
}

func (r *Refs) readLoose(name string) (Ref, bool, error) {
	p := r.path(name)
	for attempt := 0; ; attempt++ {
		fi, err := os.Stat(p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				r.forget(name)
				return Ref{}, false, nil
			}
			return Ref{}, false, unavailable(err)
		}
		if fi.IsDir() {
			r.forget(name)
			return Ref{}, false, nil
		}
		r.mu.Lock()
		c := r.loose[name]
		r.mu.Unlock()
		if c != nil && c.stable && sameFile(c.fi, fi) {
			return c.ref, true, nil
		}
		start := time.Now()
		data, err := readSmallFile(p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && attempt < 3 {
				continue // replaced between stat and read
			}
			return Ref{}, false, unavailable(err)
		}
		ref, err := parseRef(data)
		if err != nil {
			if attempt < 3 {
				// Writers that update in place (go-git) leave the file
				// empty for a moment.
				time.Sleep(time.Millisecond)
				continue
			}
			return Ref{}, false, fmt.Errorf("reference %s: %w", name, err)
		}
		r.mu.Lock()
		r.loose[name] = &cachedRef{fi: fi, stable: stableSince(fi, start), ref: ref}
		r.mu.Unlock()
		return ref, true, nil
	}
}

func (r *Refs) forget(name string) {
	r.mu.Lock()
	delete(r.loose, name)
	r.mu.Unlock()
}

func (r *Refs) readPacked() (map[string]plumbing.Hash, error) {
	p := filepath.Join(r.commonDir, "packed-refs")
	fi, err := os.Stat(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, unavailable(err)
	}
	r.mu.Lock()
	c := r.packed
	r.mu.Unlock()
	if c != nil && c.stable && sameFile(c.fi, fi) {
		return c.refs, nil
	}
	start := time.Now()
	data, err := os.ReadFile(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, unavailable(err)
	}
	refs := parsePackedRefs(data)
	r.mu.Lock()
	r.packed = &cachedPacked{fi: fi, stable: stableSince(fi, start), refs: refs}
	r.mu.Unlock()
	return refs, nil
}

func unavailable(err error) error {
	return fmt.Errorf("%w: %w", source.ErrUnavailable, err)
}

// stableSince reports whether fi was last modified long enough before
// readStart for a later change to show in its timestamp.
func stableSince(fi fs.FileInfo, readStart time.Time) bool {
	window := fineRacyWindow
	if fi.ModTime().Nanosecond() == 0 {
		window = coarseRacyWindow
	}
	return fi.ModTime().Before(readStart.Add(-window))
}

// readSmallFile reads a reference file, which is short, with fewer system
// calls than os.ReadFile.
func readSmallFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf [512]byte
	n, err := io.ReadFull(f, buf[:])
	switch {
	case err == io.ErrUnexpectedEOF || err == io.EOF:
		return buf[:n], nil
	case err != nil:
		return nil, err
	}
	// Longer than expected: read the rest.
	rest, err := io.ReadAll(f)
	return append(buf[:n:n], rest...), err
}

func sameFile(a, b fs.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime()) && a.Mode() == b.Mode()
}

func parseRef(data []byte) (Ref, error) {
	line := bytes.TrimRight(data, "\r\n \t")
	if target, ok := bytes.CutPrefix(line, []byte("ref:")); ok {
		t := string(bytes.TrimSpace(target))
		if !ValidRefName(t) {
			return Ref{}, fmt.Errorf("malformed symbolic reference %q", line)
		}
		return Ref{Target: t}, nil
	}
	if len(line) < 40 {
		return Ref{}, fmt.Errorf("malformed reference %q", line)
	}
	h, err := parseHex(line[:40])
	if err != nil {
		return Ref{}, err
	}
	return Ref{Hash: h}, nil
}

func parsePackedRefs(data []byte) map[string]plumbing.Hash {
	refs := make(map[string]plumbing.Hash)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) < 42 || line[0] == '#' || line[0] == '^' || line[40] != ' ' {
			continue
		}
		h, err := parseHex(line[:40])
		if err != nil {
			continue
		}
		refs[string(line[41:])] = h
	}
	return refs
}

// ReflogEntry is what a reference update records in the reference's log.
type ReflogEntry struct {
	Who     source.Signature
	Message string
}

// Update moves the reference name from old to new, creating it when old is
// plumbing.ZeroHash. It fails with an error wrapping ErrRefMoved when the
// reference does not hold old, and with one wrapping ErrRefLocked when
// another writer holds its lock for more than a second. When the reference
// has a log (logs/<name>), log, if not nil, is appended to it.
func (r *Refs) Update(ctx context.Context, name string, old, new plumbing.Hash, log *ReflogEntry) (err error) {
	if !ValidRefName(name) || name == "HEAD" {
		return fmt.Errorf("invalid reference name %q", name)
	}
	p := r.path(name)
	if err := os.MkdirAll(filepath.Dir(p), 0o777); err != nil {
		return unavailable(err)
	}
	lock := p + ".lock"
	f, err := createLock(ctx, lock)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(lock)
		}
	}()

	cur, err := r.Read(name)
	switch {
	case errors.Is(err, ErrRefNotFound):
		cur = Ref{}
	case err != nil:
		return err
	}
	if cur.Target != "" {
		return fmt.Errorf("%s is a symbolic reference to %s", name, cur.Target)
	}
	if cur.Hash != old {
		return fmt.Errorf("%s: expected %s, found %s: %w", name, old, cur.Hash, ErrRefMoved)
	}
	if _, err := f.WriteString(new.String() + "\n"); err != nil {
		return unavailable(err)
	}
	if err := f.Close(); err != nil {
		return unavailable(err)
	}
	if log != nil {
		r.appendLog(name, old, new, log)
	}
	if err := os.Rename(lock, p); err != nil {
		return unavailable(err)
	}
	return nil
}

func createLock(ctx context.Context, lock string) (*os.File, error) {
	deadline := time.Now().Add(lockTimeout)
	wait := time.Millisecond
	for {
		f, err := os.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, unavailable(err)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%w: %s exists; another git process seems to be running, or one crashed and left it behind, in which case remove it", ErrRefLocked, lock)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, 50*time.Millisecond)
	}
}

// appendLog appends an entry to the log of reference name if it has one.
// Logs are an aid to people, not part of the repository's state, so
// failures are ignored as Git ignores a missing log.
func (r *Refs) appendLog(name string, old, new plumbing.Hash, e *ReflogEntry) {
	dir := r.commonDir
	if !strings.HasPrefix(name, "refs/") {
		dir = r.gitDir
	}
	f, err := os.OpenFile(filepath.Join(dir, "logs", filepath.FromSlash(name)), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return
	}
	defer f.Close()
	msg, _, _ := strings.Cut(e.Message, "\n")
	var b []byte
	b = append(b, old.String()...)
	b = append(b, ' ')
	b = append(b, new.String()...)
	b = append(b, ' ')
	b = append(b, SanitizeIdent(e.Who.Name)...)
	b = append(b, " <"...)
	b = append(b, SanitizeIdent(e.Who.Email)...)
	b = append(b, "> "...)
	b = strconv.AppendInt(b, e.Who.When.Unix(), 10)
	b = append(b, ' ')
	b = e.Who.When.AppendFormat(b, "-0700")
	b = append(b, '\t')
	b = append(b, strings.TrimSpace(msg)...)
	b = append(b, '\n')
	f.Write(b)
}
