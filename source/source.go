// Package source defines where repository trees come from and how changes to
// them become commits.
//
// A Source resolves a revision (branch, tag or commit) to an immutable
// [Snapshot] and applies changes on top of a branch. Implementations live
// beneath this package (local/, and git/ for remotes) and prove themselves
// against the conformance suite in sourcetest.
package source

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Sentinel errors. Implementations wrap them so that callers can map them to
// API codes with errors.Is.
var (
	// ErrRevisionNotFound reports a revision that names no branch, tag or commit.
	ErrRevisionNotFound = errors.New("revision not found")
	// ErrInvalidRevision reports a revision that is not well formed.
	ErrInvalidRevision = errors.New("invalid revision")
	// ErrNotWritable reports a write to a revision that is not a branch.
	ErrNotWritable = errors.New("revision is not a branch")
	// ErrConflict reports a write that lost to concurrent writers more times
	// than the source retries.
	ErrConflict = errors.New("branch moved concurrently")
	// ErrUnavailable reports that the repository could not be reached.
	ErrUnavailable = errors.New("repository unavailable")
	// ErrInvalidPath reports a write to a path outside the repository tree or
	// otherwise not acceptable as a file path.
	ErrInvalidPath = errors.New("invalid path")
	// ErrChangeSetNotFound reports an update naming a change set that does
	// not exist (or is not a change set of this source).
	ErrChangeSetNotFound = errors.New("change set not found")
	// ErrIdempotencyKeyReused reports an update whose idempotency key was
	// first used with a different request.
	ErrIdempotencyKeyReused = errors.New("idempotency key already used with a different request")
	// ErrRejected reports a push the remote refused for a reason other than
	// a concurrent change (a hook, a protected branch); the error's message
	// carries the remote's words.
	ErrRejected = errors.New("rejected by the remote repository")
	// ErrInvalidMessage reports a commit message that a source will not
	// write: one with a control character other than tab and newline, or a
	// line that begins with a reserved trailer (see CheckMessage).
	ErrInvalidMessage = errors.New("invalid commit message")
	// ErrChangeSetOwner reports an update that would add to a change set
	// another requester started, without UpdateRequest.OverrideOwner.
	ErrChangeSetOwner = errors.New("change set belongs to another requester")
)

// WriteMode says where the commits of updates go. It is configured per
// source.
type WriteMode int

const (
	// ModeDirect commits on the target branch itself and moves it; when
	// the branch moved meanwhile the change is applied again on its new
	// head, a bounded number of times.
	ModeDirect WriteMode = iota
	// ModeBranch commits on a new branch, <prefix><id>, made from the
	// target branch's head: a change set. Later updates may add commits to
	// it by naming it in UpdateRequest.ChangeSet. The target branch is never
	// moved. (A proposal is a change set plus a pull request; see scm/.)
	ModeBranch
)

func (m WriteMode) String() string {
	switch m {
	case ModeDirect:
		return "direct"
	case ModeBranch:
		return "branch"
	default:
		return "unknown"
	}
}

// ParseWriteMode parses the names String returns.
func ParseWriteMode(s string) (WriteMode, error) {
	switch s {
	case "direct":
		return ModeDirect, nil
	case "branch":
		return ModeBranch, nil
	default:
		return 0, fmt.Errorf("unknown write mode %q (want direct or branch)", s)
	}
}

// DefaultBranchPrefix is the prefix of change-set branches unless a
// source is configured otherwise.
const DefaultBranchPrefix = "cup/"

// DefaultAuthorName and DefaultAuthorEmail are the identity a source
// commits as unless it is configured otherwise: "cup <cup@localhost>".
const (
	DefaultAuthorName  = "cup"
	DefaultAuthorEmail = "cup@localhost"
)

// Commit message trailers with which updates record who asked for them
// (UpdateRequest.Requester), who owns the change set they add to, and
// their idempotency key and request fingerprint, so that a repeated
// request can be recognised from the repository alone, by any process,
// after any failure.
//
// Only sources write these trailers, in this order, at the very end of
// the message: a caller's message that has a line beginning with any of
// them (in any case) is refused (see CheckMessage), and readers trust
// only the trailers that end the message in this order.
const (
	TrailerRequestedBy    = "Requested-by"
	TrailerChangeSetOwner = "Cup-Change-Set-Owner"
	TrailerIdempotencyKey = "Cup-Idempotency-Key"
	TrailerRequest        = "Cup-Request"
)

// ReservedTrailers are the trailers only sources write, in the order they
// write them.
var ReservedTrailers = []string{TrailerRequestedBy, TrailerChangeSetOwner, TrailerIdempotencyKey, TrailerRequest}

// Snapshot is the tree of one commit. It never changes.
type Snapshot struct {
	// Revision is the revision the snapshot was resolved from ("" for the default branch).
	Revision string
	// Commit is the full hexadecimal id of the commit.
	Commit string
	// FS holds the commit's tree. It is safe for concurrent use and implements
	// fs.ReadFileFS, fs.ReadDirFS and fs.StatFS.
	FS fs.FS
}

// Writer is a writable view of a tree: reads see earlier writes. Paths are
// slash-separated and relative to the tree root, as for fs.ValidPath; anything
// else fails with an error wrapping ErrInvalidPath. It satisfies
// controller.WriteFS.
type Writer interface {
	fs.FS
	WriteFile(name string, data []byte, perm fs.FileMode) error
	Remove(name string) error
}

// ApplyFunc makes a change: it reads base and writes through w. It may be
// called more than once, each time on a newer base, when concurrent writers
// move the branch; it must derive everything it writes from base and its own
// arguments. An error returned by ApplyFunc aborts the update and is returned
// unchanged.
type ApplyFunc func(ctx context.Context, base *Snapshot, w Writer) error

// Signature names the author of a commit.
type Signature struct {
	Name  string
	Email string
	When  time.Time
}

// UpdateRequest asks for a change on top of a branch.
type UpdateRequest struct {
	// Revision is the branch to change ("" for the default branch).
	Revision string
	// Message is the commit message.
	Message string
	// Author, when set, overrides the source's configured author.
	Author *Signature
	// DryRun computes the changes and their diff without writing anything.
	DryRun bool
	// Apply makes the change.
	Apply ApplyFunc
	// ChangeSet, when set, names a change set (a branch an earlier update
	// made in ModeBranch, as returned in UpdateResult.Branch): the change
	// is committed on top of it, whatever the source's mode, and Revision
	// is ignored. A name that is not an existing branch with the source's
	// change-set prefix fails with ErrChangeSetNotFound.
	ChangeSet string
	// IdempotencyKey, when set, makes the update safe to repeat: an update
	// with a key that an earlier update already committed returns that
	// update's result (with Replayed set) and writes nothing, also when the
	// earlier caller never saw its answer. In ModeBranch a new change set's
	// branch name is derived from the key (and Requester), so a repeat can
	// never make a second branch. The key, Requester and Fingerprint are
	// recorded in the commit message's trailers; a repeat whose Fingerprint
	// differs fails with ErrIdempotencyKeyReused. A key belongs to its
	// Requester: an update never replays, nor is refused for, a commit
	// another requester made with the same key. Keys are printable ASCII
	// without spaces, at most 128 bytes.
	IdempotencyKey string
	// Fingerprint identifies the request; see IdempotencyKey.
	Fingerprint string
	// Resources names the API resources the change writes, for commit
	// messages and proposals. Optional.
	Resources []ResourceRef
	// Requester names who asked for the change (an authenticated user). It
	// is recorded in the commit message's TrailerRequestedBy trailer and in
	// proposals. Optional.
	//
	// A change set belongs to the requester of the update that made it
	// (recorded in TrailerChangeSetOwner). An update with a Requester that
	// names a change set another requester owns fails with
	// ErrChangeSetOwner unless OverrideOwner is set. Updates without a
	// Requester, and change sets without an owner, are not checked.
	Requester string
	// OverrideOwner lets the update add to a change set that another
	// requester owns (see Requester): the caller holds a grant that says
	// so. The change set keeps its owner.
	OverrideOwner bool
}

// Signer signs commits: it returns an ASCII-armored detached signature
// (OpenPGP, as git verify-commit checks) of a commit's content.
type Signer interface {
	Sign(payload []byte) ([]byte, error)
}

// ResourceRef names an API resource.
type ResourceRef struct {
	Group, Version, Kind, Plural string
	Namespace, Name              string
}

// ProposalRef names a proposal (a pull or merge request) that an update
// opened or added to.
type ProposalRef struct {
	// ID is the proposal's number on its host.
	ID string
	// URL is its web page.
	URL string
}

// Operation says what happened to a file.
type Operation int

const (
	// OpCreate adds a file.
	OpCreate Operation = iota + 1
	// OpUpdate changes a file's content.
	OpUpdate
	// OpDelete removes a file.
	OpDelete
)

func (o Operation) String() string {
	switch o {
	case OpCreate:
		return "create"
	case OpUpdate:
		return "update"
	case OpDelete:
		return "delete"
	default:
		return "unknown"
	}
}

// FileChange is one changed file.
type FileChange struct {
	Path string
	Op   Operation
	// Diff is a unified diff of the file, from a/Path to b/Path.
	Diff string
}

// UpdateResult says what an update did.
type UpdateResult struct {
	// Unchanged is true when the change left the tree as it was; nothing was written.
	Unchanged bool
	// Branch is the branch that was (or, on a dry run, would be) written.
	Branch string
	// Base is the commit the change was applied to.
	Base string
	// Commit is the new commit, empty when unchanged or on a dry run.
	Commit string
	// Changes lists the changed files, sorted by path.
	Changes []FileChange
	// Replayed is true when the result is that of an earlier update with
	// the same idempotency key; nothing was written this time.
	Replayed bool
	// Proposal is the proposal the change is under review in, for sources
	// that propose changes (see scm/); nil otherwise.
	Proposal *ProposalRef
}

// Source gives access to the trees of one repository.
//
// Implementations are safe for concurrent use. Update is atomic: either the
// branch moves to a commit holding the whole change, or nothing is written.
// Concurrent updates of the same branch never lose each other's commits.
type Source interface {
	// View resolves rev ("" for the default branch) to a snapshot.
	View(ctx context.Context, rev string) (*Snapshot, error)
	// Update applies req.Apply on top of the branch req.Revision.
	Update(ctx context.Context, req *UpdateRequest) (*UpdateResult, error)
}

// Commit is a commit, as History reads it.
type Commit struct {
	// ID is the commit's full hexadecimal id.
	ID string
	// Parents are the ids of its parents, the first parent first.
	Parents []string
	// Author and Committer say who made it and when.
	Author, Committer Signature
	// Message is the commit message as stored.
	Message string
}

// History is an optional ability of a Source: reading the commits behind
// its snapshots, and which files differ between two of them. Watches and
// per-resource history use it to walk a branch commit by commit. Sources
// whose snapshots come from Git have it.
//
// Implementations are safe for concurrent use. Both methods take full
// hexadecimal commit ids, as Snapshot.Commit holds them (other revision
// syntax fails with ErrInvalidRevision), and fail with an error wrapping
// ErrRevisionNotFound for a commit the source does not hold.
type History interface {
	// Commit returns the commit id.
	Commit(ctx context.Context, id string) (*Commit, error)
	// ChangedPaths returns the paths of the files that differ between the
	// trees of the commits from and to, sorted; from "" stands for the
	// empty tree. It reads only what differs, never a whole tree.
	ChangedPaths(ctx context.Context, from, to string) ([]string, error)
	// ContentID returns an id of the content of the file at path in the
	// tree of the commit: equal ids mean equal content. A path with no
	// file gives an error wrapping fs.ErrNotExist; a directory, one
	// wrapping fs.ErrInvalid. It reads only the trees along the path.
	ContentID(ctx context.Context, commit, path string) (string, error)
}

// MaxRevisionLen bounds the length of a revision.
const MaxRevisionLen = 1024

// CheckRevision rejects revisions that are not well formed, or that use
// syntax sources do not support (ranges, reflog syntax), with an error
// wrapping ErrInvalidRevision. The empty revision is valid.
func CheckRevision(rev string) error {
	why := ""
	switch {
	case len(rev) > MaxRevisionLen:
		why = fmt.Sprintf("longer than %d bytes", MaxRevisionLen)
	case strings.HasPrefix(rev, "-"):
		why = "starts with '-'"
	case strings.HasPrefix(rev, "~") || strings.HasPrefix(rev, "^"):
		why = "has no name before '~' or '^'"
	case strings.Contains(rev, ".."):
		why = "contains '..'; ranges are not revisions"
	case strings.Contains(rev, "@{"):
		why = "uses the @{...} syntax, which is not supported"
	case strings.HasPrefix(rev, "/") || strings.HasSuffix(rev, "/") || strings.Contains(rev, "//"):
		why = "has an empty path element"
	case strings.HasSuffix(rev, ".lock") || strings.HasSuffix(rev, "."):
		why = "ends with '.lock' or '.'"
	}
	for i := 0; why == "" && i < len(rev); i++ {
		switch c := rev[i]; {
		case c < 0x20 || c == 0x7f:
			why = "contains a control character"
		case strings.IndexByte(" :?*[\\{}", c) >= 0:
			why = fmt.Sprintf("contains %q", c)
		}
	}
	if why != "" {
		return fmt.Errorf("%w %q: %s", ErrInvalidRevision, rev, why)
	}
	return nil
}

// CheckMessage rejects a commit message that a caller may not ask a
// source to write, with an error wrapping ErrInvalidMessage that says
// why: one that is not UTF-8, that has a control character other than
// tab, newline and the carriage return of a CRLF line ending (git fsck
// flags NUL; the others hide or forge text in terminals and logs), or that
// has a line beginning with one of ReservedTrailers, compared without
// regard to case as git does, followed by optional blanks and a colon.
// The empty message is valid.
func CheckMessage(msg string) error {
	if !utf8.ValidString(msg) {
		return fmt.Errorf("%w: not valid UTF-8", ErrInvalidMessage)
	}
	for i, r := range msg {
		switch {
		case r == '\t' || r == '\n' || r == '\r' && strings.HasPrefix(msg[i+1:], "\n"):
		case unicode.IsControl(r):
			return fmt.Errorf("%w: control character %U at byte %d; only tab, newline and CRLF line endings are allowed", ErrInvalidMessage, r, i)
		}
	}
	for line := range strings.Lines(msg) {
		if key := reservedTrailer(line); key != "" {
			return fmt.Errorf("%w: trailer %s is reserved: only cupd writes it, to record %s; remove the line %q",
				ErrInvalidMessage, key, reservedFor[key], strings.TrimRight(line, "\r\n"))
		}
	}
	return nil
}

// reservedFor says what each reserved trailer records.
var reservedFor = map[string]string{
	TrailerRequestedBy:    "who asked for the change",
	TrailerChangeSetOwner: "who owns the change set",
	TrailerIdempotencyKey: "the idempotency key",
	TrailerRequest:        "the request's fingerprint",
}

// reservedTrailer returns the reserved trailer that line begins with, as
// "Token:" or "Token :", or "".
func reservedTrailer(line string) string {
	for _, key := range ReservedTrailers {
		if len(line) < len(key) || !strings.EqualFold(line[:len(key)], key) {
			continue
		}
		if rest := strings.TrimLeft(line[len(key):], " \t"); strings.HasPrefix(rest, ":") {
			return key
		}
	}
	return ""
}
