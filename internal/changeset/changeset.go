package changeset

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/cup-dev/cup/internal/gitfs"
	"github.com/cup-dev/cup/source"
)

// MaxKeyLen is the length in bytes of the longest idempotency key.
const MaxKeyLen = 128

// BranchName returns the name of a new change-set branch: prefix followed
// by 10 random lowercase hexadecimal digits when key is empty, and
// otherwise by the first 16 hexadecimal digits of the SHA-256 of key, so
// that every update with the same key names the same branch.
func BranchName(prefix, key string) string {
	if key == "" {
		var b [5]byte
		rand.Read(b[:]) // never fails
		return prefix + hex.EncodeToString(b[:])
	}
	sum := sha256.Sum256([]byte(key))
	return prefix + hex.EncodeToString(sum[:8])
}

// KeyBranchName returns the name of the change set that an update in
// source.ModeBranch with idempotency key key (not empty) and requester
// makes: [BranchName] of prefix and key when requester is empty, and
// otherwise prefix followed by the first 16 hexadecimal digits of the
// SHA-256 of requester, a NUL byte and key, so that the same key from two
// requesters names two change sets, and each requester's repeat names
// their own.
func KeyBranchName(prefix, requester, key string) string {
	if requester == "" {
		return BranchName(prefix, key)
	}
	sum := sha256.Sum256([]byte(requester + "\x00" + key))
	return prefix + hex.EncodeToString(sum[:8])
}

// ValidPrefix reports whether prefix can begin the names of change-set
// branches: it is not empty, and prefix followed by an id is a valid
// branch name.
func ValidPrefix(prefix string) bool {
	return prefix != "" && gitfs.ValidRefName("refs/heads/"+prefix+"0")
}

// IsChangeSet reports whether branch, a short branch name such as
// UpdateResult.Branch holds, names a change set of prefix: it is a valid
// branch name made of prefix and a non-empty id.
func IsChangeSet(prefix, branch string) bool {
	return prefix != "" && len(branch) > len(prefix) && strings.HasPrefix(branch, prefix) &&
		gitfs.ValidRefName("refs/heads/"+branch)
}

// ValidKey reports whether key is a well-formed idempotency key: 1 to
// [MaxKeyLen] bytes of printable ASCII without spaces (0x21 to 0x7e).
func ValidKey(key string) bool {
	if key == "" || len(key) > MaxKeyLen {
		return false
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x21 || key[i] > 0x7e {
			return false
		}
	}
	return true
}

// CheckKey returns an error saying what is wrong with key if it is not a
// valid idempotency key (see [ValidKey]), and nil otherwise, also for the
// empty key, which means none.
func CheckKey(key string) error {
	switch {
	case key == "" || ValidKey(key):
		return nil
	case len(key) > MaxKeyLen:
		return fmt.Errorf("invalid idempotency key: longer than %d bytes", MaxKeyLen)
	}
	return fmt.Errorf("invalid idempotency key %q: want printable ASCII characters without spaces", key)
}

// CheckRequest returns an error saying what is wrong with req's
// idempotency key ([CheckKey]) or message (source.CheckMessage, wrapping
// source.ErrInvalidMessage), and nil when both are valid: what every
// source checks before it looks at the repository.
func CheckRequest(req *source.UpdateRequest) error {
	if err := CheckKey(req.IdempotencyKey); err != nil {
		return err
	}
	return source.CheckMessage(req.Message)
}

// Trailers are what an update records in its commit message's trailers.
type Trailers struct {
	// RequestedBy names who asked for the change (source.TrailerRequestedBy).
	RequestedBy string
	// ChangeSetOwner names who owns the change set the commit is on
	// (source.TrailerChangeSetOwner); empty for commits outside change
	// sets and for change sets without an owner.
	ChangeSetOwner string
	// IdempotencyKey and Fingerprint identify a keyed request
	// (source.TrailerIdempotencyKey and source.TrailerRequest); Fingerprint
	// is recorded only with a key.
	IdempotencyKey, Fingerprint string
}

// Message returns the commit message of an update: msg followed by the
// trailers source.TrailerRequestedBy (when t.RequestedBy is set),
// source.TrailerChangeSetOwner (when t.ChangeSetOwner is set),
// source.TrailerIdempotencyKey and source.TrailerRequest (when
// t.IdempotencyKey is set; the latter left out when t.Fingerprint is
// empty), in the order of source.ReservedTrailers. The trailers join a
// trailer block that msg ends with; otherwise a blank line separates them
// from msg, as git interpret-trailers would. With no trailers to write,
// msg is returned as it is.
//
// The key should satisfy [ValidKey], and msg source.CheckMessage, so that
// it holds none of these trailers itself; the other values may be
// anything. Bytes that are not printable ASCII are dropped from the
// fingerprint and the key, and spaces from the key, and percent-encoded
// in the requester and owner (as are '%' and spaces at their ends, so that
// two names never read the same), so that none can end the trailer block
// or add trailers of its own; [Replay] compares fingerprints, and [Find]
// and [CheckOwner] names, the same way. [Recorded] reads the trailers
// back.
func Message(msg string, t Trailers) string {
	requester := value(t.RequestedBy)
	owner := value(t.ChangeSetOwner)
	if t.IdempotencyKey == "" && requester == "" && owner == "" {
		return msg
	}
	var b strings.Builder
	body := strings.TrimRight(msg, " \t\r\n")
	b.WriteString(body)
	switch _, ok := trailerBlock(body); {
	case ok:
		b.WriteByte('\n')
	case body == "":
		// An empty title: git never reads the first paragraph as trailers.
		b.WriteByte('\n')
	default:
		b.WriteString("\n\n")
	}
	if requester != "" {
		writeTrailer(&b, source.TrailerRequestedBy, requester)
	}
	if owner != "" {
		writeTrailer(&b, source.TrailerChangeSetOwner, owner)
	}
	if t.IdempotencyKey != "" {
		writeTrailer(&b, source.TrailerIdempotencyKey, printable(t.IdempotencyKey, 0x21))
		if fp := fingerprintValue(t.Fingerprint); fp != "" {
			writeTrailer(&b, source.TrailerRequest, fp)
		}
	}
	return b.String()
}

// Recorded returns the trailers an update recorded in message, as
// [Message] wrote them: only the reserved trailers (source.ReservedTrailers,
// compared without regard to case) that end message's trailer block, each
// at most once and in the order Message writes them. Reading stops at the
// first line from the end that breaks that order, so a reserved trailer
// that a caller's message carried before them does not count, nor one in
// an earlier paragraph.
func Recorded(message string) Trailers {
	var t Trailers
	lines, ok := trailerBlock(message)
	if !ok {
		return t
	}
	fields := [...]*string{&t.RequestedBy, &t.ChangeSetOwner, &t.IdempotencyKey, &t.Fingerprint}
	next := len(fields)
	for i := len(lines) - 1; i >= 0; i-- {
		token, v, _ := strings.Cut(lines[i], ":")
		token = strings.TrimRight(token, " \t")
		pos := slices.IndexFunc(source.ReservedTrailers, func(k string) bool { return strings.EqualFold(k, token) })
		if pos < 0 || pos >= next {
			break
		}
		*fields[pos], next = strings.TrimSpace(v), pos
	}
	return t
}

// value is the trailer value that records a name (a requester, an
// owner): "" for a name of nothing but white space, and otherwise the name
// with every byte outside printable ASCII, '%', and a space that begins or
// ends it percent-encoded (%XX), so that the value stays on one line and
// two names never record the same value; owners and requesters are
// compared as recorded.
func value(s string) string {
	if strings.TrimSpace(s) == "" {
		return ""
	}
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e || c == '%' || c == ' ' && (i == 0 || i == len(s)-1) {
			b.WriteByte('%')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&0xf])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func writeTrailer(b *strings.Builder, name, value string) {
	b.WriteString(name)
	b.WriteString(": ")
	b.WriteString(value)
	b.WriteByte('\n')
}

// printable drops the bytes of s outside min to 0x7e.
func printable(s string, min byte) string {
	return strings.Map(func(r rune) rune {
		if r < rune(min) || r > 0x7e {
			return -1
		}
		return r
	}, s)
}

// fingerprintValue is the trailer value that records fingerprint.
func fingerprintValue(fingerprint string) string {
	return strings.TrimSpace(printable(fingerprint, 0x20))
}

// Trailer returns the value of the last trailer called name (compared
// without regard to case, as git does) in the trailer block that ends
// message: its last paragraph, when that is not the first (the title) and
// every line of it is a "Token: value" line or the indented continuation
// of one. Continuation lines are joined to the value with single spaces.
//
// Trailer reads any trailer, also one a caller's message carried; to read
// what an update recorded (who asked, the owner, the key), use [Recorded].
func Trailer(message, name string) (string, bool) {
	lines, ok := trailerBlock(message)
	if !ok {
		return "", false
	}
	var value string
	found, current := false, false
	for _, line := range lines {
		if line[0] == ' ' || line[0] == '\t' {
			if current {
				value += " " + strings.TrimSpace(line)
			}
			continue
		}
		token, v, _ := strings.Cut(line, ":")
		current = strings.EqualFold(strings.TrimRight(token, " \t"), name)
		if current {
			value, found = strings.TrimSpace(v), true
		}
	}
	return value, found
}

// trailerBlock returns the lines of the trailer block that ends message.
func trailerBlock(message string) ([]string, bool) {
	lines := strings.Split(strings.TrimRight(message, " \t\r\n"), "\n")
	start := -1
	for i := len(lines) - 1; i >= 0; i-- {
		lines[i] = strings.TrimRight(lines[i], "\r")
		if strings.TrimSpace(lines[i]) == "" {
			start = i + 1
			break
		}
	}
	if start < 0 || start == len(lines) {
		return nil, false // a single paragraph is the title
	}
	block := lines[start:]
	for i, line := range block {
		cont := line[0] == ' ' || line[0] == '\t'
		if cont && i == 0 || !cont && !isTrailerLine(line) {
			return nil, false
		}
	}
	return block, true
}

// isTrailerLine reports whether line is "Token: value": a token of
// letters, digits and hyphens, optional blanks, and a colon.
func isTrailerLine(line string) bool {
	i := 0
	for i < len(line) && (isAlnum(line[i]) || line[i] == '-') {
		i++
	}
	if i == 0 {
		return false
	}
	for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
		i++
	}
	return i < len(line) && line[i] == ':'
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}
