package gitfs

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/cup-dev/cup/source"
)

// DefaultCommitCacheSize is the number of bytes of commit objects a
// [Store] keeps decoded: a few thousand commits, enough for history walks
// that look back a few hundred commits to stay in memory.
const DefaultCommitCacheSize = 1 << 20

// CommitInfo is a decoded commit object.
type CommitInfo struct {
	// Hash is the id of the commit.
	Hash plumbing.Hash
	// Tree is the id of the commit's tree.
	Tree plumbing.Hash
	// Parents are the commit's parents, first parent first.
	Parents []plumbing.Hash
	// Author and Committer are the commit's identities, with the time
	// zone the commit records.
	Author    source.Signature
	Committer source.Signature
	// Message is the commit message as stored.
	Message string
}

// FirstParent returns the commit's first parent, or plumbing.ZeroHash for a
// root commit.
func (c *CommitInfo) FirstParent() plumbing.Hash {
	if len(c.Parents) == 0 {
		return plumbing.ZeroHash
	}
	return c.Parents[0]
}

var errMalformedCommit = errors.New("malformed commit object")

// ReadCommit returns the decoded commit h. Commits never change, so decoded
// commits are kept in a cache of their own and a commit read again (as a
// history walk does) costs no I/O. A missing object gives an error wrapping
// plumbing.ErrObjectNotFound; an object that is not a commit, one wrapping
// [ErrNotCommit]. The caller owns the returned value.
func (s *Store) ReadCommit(h plumbing.Hash) (*CommitInfo, error) {
	c, ok := s.commits.get(h)
	if !ok {
		typ, data, err := s.readObject(plumbing.AnyObject, h)
		if err != nil {
			return nil, fmt.Errorf("read commit %s: %w", h, err)
		}
		if typ != plumbing.CommitObject {
			return nil, fmt.Errorf("%s is a %s: %w", h, typ, ErrNotCommit)
		}
		if c, err = parseCommit(h, data); err != nil {
			return nil, fmt.Errorf("commit %s: %w", h, err)
		}
		s.commits.add(h, c, int64(len(data))+128)
	}
	cp := *c
	cp.Parents = slices.Clone(c.Parents)
	return &cp, nil
}

// parseCommit decodes the content of commit object h. Headers it does not
// know (encoding, gpgsig and their continuation lines) are skipped.
func parseCommit(h plumbing.Hash, data []byte) (*CommitInfo, error) {
	c := &CommitInfo{Hash: h}
	headers, msg, _ := bytes.Cut(data, []byte("\n\n"))
	c.Message = string(msg)
	haveTree := false
	for len(headers) > 0 {
		var line []byte
		line, headers, _ = bytes.Cut(headers, []byte{'\n'})
		key, val, _ := bytes.Cut(line, []byte{' '})
		var err error
		switch string(key) {
		case "tree":
			c.Tree, err = parseHex(val)
			haveTree = true
		case "parent":
			var p plumbing.Hash
			p, err = parseHex(val)
			c.Parents = append(c.Parents, p)
		case "author":
			c.Author, err = parseSignature(val)
		case "committer":
			c.Committer, err = parseSignature(val)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", errMalformedCommit, key, err)
		}
	}
	if !haveTree {
		return nil, fmt.Errorf("%w: no tree", errMalformedCommit)
	}
	return c, nil
}

// parseSignature decodes "Name <email> 1700000000 +0100".
func parseSignature(b []byte) (source.Signature, error) {
	lt := bytes.IndexByte(b, '<')
	gt := bytes.LastIndexByte(b, '>')
	if lt < 0 || gt < lt {
		return source.Signature{}, fmt.Errorf("no <email> in %q", b)
	}
	sig := source.Signature{
		Name:  string(bytes.TrimSpace(b[:lt])),
		Email: string(b[lt+1 : gt]),
	}
	secs, tz, _ := bytes.Cut(bytes.TrimSpace(b[gt+1:]), []byte{' '})
	unix, err := strconv.ParseInt(string(secs), 10, 64)
	if err != nil {
		return source.Signature{}, fmt.Errorf("bad time in %q", b)
	}
	sig.When = time.Unix(unix, 0).In(parseZone(tz))
	return sig, nil
}

// parseZone decodes a time zone offset such as +0100 or -0730; anything
// else is UTC, as Git treats it.
func parseZone(tz []byte) *time.Location {
	if len(tz) != 5 || (tz[0] != '+' && tz[0] != '-') {
		return time.UTC
	}
	n, err := strconv.Atoi(string(tz[1:]))
	if err != nil || n < 0 {
		return time.UTC
	}
	offset := (n/100*60 + n%100) * 60
	if tz[0] == '-' {
		offset = -offset
	}
	if offset == 0 {
		return time.UTC
	}
	return time.FixedZone(string(tz), offset)
}
