package git

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"syscall"

	"github.com/go-git/go-billy/v5"

	"github.com/cup-dev/cup/internal/gitfs"
	"github.com/cup-dev/cup/source"
)

// A cache directory can fill its disk, and the process can be killed at
// any time. Objects are written to a temporary file and renamed into place,
// so neither leaves a partial object behind; go-git writes references in
// place, though (truncate, then write), so either can leave a reference
// empty or torn, and go-git then fails every listing of the references,
// and with it every fetch and the next start. The cache only mirrors the
// remote: such a reference is removed and the next fetch writes it again.

// errNoSpace marks errors that outOfSpace explained.
var errNoSpace = errors.New("out of space")

// outOfSpace explains a failure to write the cache directory for want of
// space (ENOSPC, or EDQUOT: a disk quota) as an error wrapping
// source.ErrUnavailable that says so, rather than blaming the remote or
// passing for an unexpected failure, and makes the cache usable again: it
// removes the references the failure may have torn and makes the next
// fetch write every reference. Other errors are returned as they are.
func (s *Source) outOfSpace(err error) error {
	if err == nil || s.cfg.cacheDir == "" || errors.Is(err, errNoSpace) ||
		!errors.Is(err, syscall.ENOSPC) && !errors.Is(err, syscall.EDQUOT) {
		return err
	}
	s.repairRefs()
	return fmt.Errorf("%w: the cache directory %s is %w: free space on its disk (running git gc in it helps), then retry: %w",
		source.ErrUnavailable, s.cfg.cacheDir, errNoSpace, err)
}

// repairRefs removes the references of the cache that a failed write left
// torn, and marks the references stale so that the next fetch writes them
// all (see Fetch). Failures are logged: the next fetch reports them.
func (s *Source) repairRefs() {
	s.stale.Store(true)
	if s.cacheFS == nil || s.store == nil {
		return
	}
	var removed []string
	err := s.store.Exclusive(func() (err error) {
		removed, err = removeTornRefs(s.cacheFS)
		return err
	})
	if len(removed) > 0 {
		s.cfg.Logger.Warn("removed references a failed write left torn in the cache directory; the next fetch writes them again",
			"dir", s.cfg.cacheDir, "refs", removed)
	}
	if err != nil {
		s.cfg.Logger.Warn("checking the cache directory's references failed", "dir", s.cfg.cacheDir, "error", err)
	}
}

// removeTornRefs removes HEAD and the loose references under refs/ whose
// file holds neither an object id nor "ref: <name>", and returns their
// names. Lock files (*.lock) of git commands are left alone.
func removeTornRefs(fsys billy.Filesystem) ([]string, error) {
	var removed []string
	check := func(name string) error {
		ok, err := validRefFile(fsys, name)
		if err != nil || ok {
			return err
		}
		if err := fsys.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		removed = append(removed, name)
		return nil
	}
	var walk func(dir string) error
	walk = func(dir string) error {
		entries, err := fsys.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		} else if err != nil {
			return err
		}
		for _, e := range entries {
			name := dir + "/" + e.Name()
			switch {
			case e.IsDir():
				err = walk(name)
			case e.Mode().IsRegular() && !strings.HasSuffix(name, ".lock"):
				err = check(name)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	if err := check("HEAD"); err != nil {
		return removed, err
	}
	return removed, walk("refs")
}

// validRefFile reports whether the reference file name holds an object id
// or a symbolic reference, or does not exist.
func validRefFile(fsys billy.Filesystem, name string) (bool, error) {
	f, err := fsys.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	} else if err != nil {
		return false, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return false, err
	}
	line := strings.TrimSpace(string(b))
	if target, ok := strings.CutPrefix(line, "ref: "); ok {
		return gitfs.ValidRefName(target) || target == "HEAD", nil
	}
	_, ok := gitfs.ParseHash(line)
	return ok, nil
}
