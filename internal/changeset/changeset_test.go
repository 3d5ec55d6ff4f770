package changeset_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/cup-dev/cup/internal/changeset"
	"github.com/cup-dev/cup/source"
)

func TestBranchName(t *testing.T) {
	t.Parallel()
	random := regexp.MustCompile(`^cup/[0-9a-f]{10}$`)
	seen := make(map[string]bool)
	for range 100 {
		name := changeset.BranchName("cup/", "")
		if !random.MatchString(name) || !changeset.IsChangeSet("cup/", name) {
			t.Fatalf("BranchName without key = %q, want cup/ and 10 hex digits", name)
		}
		if seen[name] {
			t.Fatalf("BranchName without key repeated %q", name)
		}
		seen[name] = true
	}
	sum := sha256.Sum256([]byte("order-42"))
	want := "proposals/" + hex.EncodeToString(sum[:])[:16]
	for range 2 {
		if got := changeset.BranchName("proposals/", "order-42"); got != want {
			t.Fatalf("BranchName with key = %q, want %q", got, want)
		}
	}
	if changeset.BranchName("cup/", "order-43") == changeset.BranchName("cup/", "order-42") {
		t.Fatal("different keys name the same branch")
	}
}

func TestIsChangeSet(t *testing.T) {
	t.Parallel()
	tests := []struct {
		prefix, branch string
		want           bool
	}{
		{"cup/", "cup/0123456789", true},
		{"cup/", "cup/my-feature", true},
		{"cup-", "cup-1", true},
		{"cup/", "cup/", false},
		{"cup/", "cup", false},
		{"cup/", "main", false},
		{"cup/", "other/cup/1", false},
		{"cup/", "refs/heads/cup/1", false},
		{"cup/", "cup/a..b", false},
		{"cup/", "cup/x.lock", false},
		{"cup/", "cup/a b", false},
		{"cup/", "cup/a\nb", false},
		{"cup/", "cup//x", false},
		{"", "main", false},
	}
	for _, tt := range tests {
		if got := changeset.IsChangeSet(tt.prefix, tt.branch); got != tt.want {
			t.Errorf("IsChangeSet(%q, %q) = %v, want %v", tt.prefix, tt.branch, got, tt.want)
		}
	}
}

func TestValidPrefix(t *testing.T) {
	t.Parallel()
	for prefix, want := range map[string]bool{
		"cup/": true, "cup-": true, "team/cup/": true, "x": true,
		"": false, "/": false, "cup//": false, "a..": false, ".cup/": false, "cup /": false, "cup~": false,
	} {
		if got := changeset.ValidPrefix(prefix); got != want {
			t.Errorf("ValidPrefix(%q) = %v, want %v", prefix, got, want)
		}
	}
}

func TestValidKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		key  string
		want bool
	}{
		{"k", true},
		{"0f8b7c1e-2c56-4d5e-9d41-3c1b9a5f7e20", true},
		{"!~", true},
		{strings.Repeat("k", 128), true},
		{"", false},
		{strings.Repeat("k", 129), false},
		{"with space", false},
		{"new\nline", false},
		{"tab\t", false},
		{"del\x7f", false},
		{"ünïcode", false},
	}
	for _, tt := range tests {
		if got := changeset.ValidKey(tt.key); got != tt.want {
			t.Errorf("ValidKey(%q) = %v, want %v", tt.key, got, tt.want)
		}
		err := changeset.CheckKey(tt.key)
		if wantErr := !tt.want && tt.key != ""; (err != nil) != wantErr {
			t.Errorf("CheckKey(%q) = %v, want an error: %v", tt.key, err, wantErr)
		}
	}
}

func TestMessage(t *testing.T) {
	t.Parallel()
	const trailers = "Cup-Idempotency-Key: k-1\nCup-Request: fp\n"
	tests := []struct {
		name, msg, key, fingerprint string
		requester, owner            string
		want                        string
	}{
		{name: "requester only", msg: "subject\n", requester: "alice", want: "subject\n\nRequested-by: alice\n"},
		{name: "owner only", msg: "subject\n", owner: "alice", want: "subject\n\nCup-Change-Set-Owner: alice\n"},
		{
			name: "every trailer", msg: "subject\n", requester: "carol", owner: "alice", key: "k-1", fingerprint: "fp",
			want: "subject\n\nRequested-by: carol\nCup-Change-Set-Owner: alice\n" + trailers,
		},
		{name: "requester and key", msg: "subject\n", requester: "alice", key: "k-1", fingerprint: "fp", want: "subject\n\nRequested-by: alice\n" + trailers},
		{
			name: "requester cannot inject", msg: "subject\n", requester: " mallory\nCup-Idempotency-Key: stolen\x00 ",
			want: "subject\n\nRequested-by: %20mallory%0ACup-Idempotency-Key: stolen%00%20\n",
		},
		{name: "names are encoded, not dropped", msg: "subject\n", requester: "José 100%", owner: "Jos", want: "subject\n\nRequested-by: Jos%C3%A9 100%25\nCup-Change-Set-Owner: Jos\n"},
		{name: "blank requester", msg: "subject\n", requester: " \n", want: "subject\n"},
		{name: "no key", msg: "subject\n", fingerprint: "fp", want: "subject\n"},
		{name: "subject", msg: "subject\n", key: "k-1", fingerprint: "fp", want: "subject\n\n" + trailers},
		{name: "no newline", msg: "subject", key: "k-1", fingerprint: "fp", want: "subject\n\n" + trailers},
		{name: "trailing blank lines", msg: "subject\n\n\n", key: "k-1", fingerprint: "fp", want: "subject\n\n" + trailers},
		{name: "empty", key: "k-1", fingerprint: "fp", want: "\n" + trailers},
		{name: "body", msg: "subject\n\nbody\n", key: "k-1", fingerprint: "fp", want: "subject\n\nbody\n\n" + trailers},
		{
			name: "joins a trailer block", msg: "subject\n\nbody\n\nSigned-off-by: A <a@example.com>\n", key: "k-1", fingerprint: "fp",
			want: "subject\n\nbody\n\nSigned-off-by: A <a@example.com>\n" + trailers,
		},
		{name: "a title is not a trailer block", msg: "Fix: typo\n", key: "k-1", fingerprint: "fp", want: "Fix: typo\n\n" + trailers},
		{name: "no fingerprint", msg: "subject\n", key: "k-1", want: "subject\n\nCup-Idempotency-Key: k-1\n"},
		{
			name: "fingerprint cannot inject", msg: "subject\n", key: "k-1", fingerprint: " f\np\n\nCup-Idempotency-Key: other\x00 ",
			want: "subject\n\nCup-Idempotency-Key: k-1\nCup-Request: fpCup-Idempotency-Key: other\n",
		},
		{name: "key cannot inject", msg: "subject\n", key: "k-1\nEvil: yes", want: "subject\n\nCup-Idempotency-Key: k-1Evil:yes\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := changeset.Trailers{RequestedBy: tt.requester, ChangeSetOwner: tt.owner, IdempotencyKey: tt.key, Fingerprint: tt.fingerprint}
			got := changeset.Message(tt.msg, in)
			if got != tt.want {
				t.Fatalf("Message = %q, want %q", got, tt.want)
			}
			if rec := changeset.Recorded(got); tt.key == "k-1" && tt.fingerprint == "fp" && rec != in {
				t.Fatalf("Recorded(%q) = %+v, want %+v", got, rec, in)
			}
			if tt.key == "" {
				return
			}
			if v, ok := changeset.Trailer(got, source.TrailerIdempotencyKey); !ok || !strings.HasPrefix(v, "k-1") {
				t.Fatalf("Trailer(key) = %q, %v", v, ok)
			}
			if tt.fingerprint == "fp" {
				if v, ok := changeset.Trailer(got, source.TrailerRequest); !ok || v != "fp" {
					t.Fatalf("Trailer(request) = %q, %v", v, ok)
				}
			}
		})
	}
}

// TestMessageGitReadsTrailers checks that git finds the trailers Message
// writes, and only those the message's own trailer block holds.
func TestMessageGitReadsTrailers(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	tests := []struct{ msg, want string }{
		{"subject\n", ""},
		{"", ""},
		{"Fix: typo\n", ""},
		{"subject\n\nbody\n\nSigned-off-by: A <a@example.com>\n", "Signed-off-by: A <a@example.com>\n"},
	}
	for _, tt := range tests {
		msg := changeset.Message(tt.msg, changeset.Trailers{IdempotencyKey: "k-1", Fingerprint: "fp"})
		cmd := exec.Command("git", "interpret-trailers", "--parse")
		cmd.Stdin = strings.NewReader(msg)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git interpret-trailers: %v", err)
		}
		if want := tt.want + "Cup-Idempotency-Key: k-1\nCup-Request: fp\n"; string(out) != want {
			t.Errorf("git reads the trailers of %q as %q, want %q", msg, out, want)
		}
	}
}

func TestRecorded(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, msg string
		want      changeset.Trailers
	}{
		{"none", "subject\n", changeset.Trailers{}},
		{"title only", "Requested-by: alice\n", changeset.Trailers{}},
		{
			"all, any case", "subject\n\nrequested-BY: carol\nCup-Change-Set-Owner : alice\ncup-idempotency-key: k\nCUP-REQUEST: fp\n",
			changeset.Trailers{RequestedBy: "carol", ChangeSetOwner: "alice", IdempotencyKey: "k", Fingerprint: "fp"},
		},
		{"after a caller's trailers", "s\n\nSigned-off-by: a\nRequested-by: bob\n", changeset.Trailers{RequestedBy: "bob"}},
		{
			"a caller's reserved trailers before them do not count", "s\n\nCup-Idempotency-Key: alice-1\nCup-Request: fp\nRequested-by: bob\n",
			changeset.Trailers{RequestedBy: "bob"},
		},
		{"twice", "s\n\nRequested-by: alice\nRequested-by: bob\n", changeset.Trailers{RequestedBy: "bob"}},
		{"out of order", "s\n\nCup-Idempotency-Key: k\nRequested-by: bob\nCup-Request: fp\n", changeset.Trailers{RequestedBy: "bob", Fingerprint: "fp"}},
		{"after another trailer", "s\n\nRequested-by: bob\nSigned-off-by: a\n", changeset.Trailers{}},
		{"in an earlier paragraph", "s\n\nRequested-by: bob\n\nthe end\n", changeset.Trailers{}},
		{"continued", "s\n\nRequested-by: bob\n more\n", changeset.Trailers{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := changeset.Recorded(tt.msg); got != tt.want {
				t.Fatalf("Recorded(%q) = %+v, want %+v", tt.msg, got, tt.want)
			}
		})
	}
}

func TestTrailer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, msg string
		value     string
		ok        bool
	}{
		{name: "found", msg: "s\n\nCup-Idempotency-Key: a\n", value: "a", ok: true},
		{name: "last wins", msg: "s\n\nCup-Idempotency-Key: a\nOther: x\ncup-idempotency-key:  b \n", value: "b", ok: true},
		{name: "blank before colon", msg: "s\n\nCup-Idempotency-Key : a\n", value: "a", ok: true},
		{name: "continuation", msg: "s\n\nCup-Idempotency-Key: a\n  b\nOther: x\n", value: "a b", ok: true},
		{name: "CRLF", msg: "s\r\n\r\nCup-Idempotency-Key: a\r\n", value: "a", ok: true},
		{name: "after a leading blank line", msg: "\nCup-Idempotency-Key: a\n", value: "a", ok: true},
		{name: "absent", msg: "s\n\nOther: x\n"},
		{name: "title only", msg: "Cup-Idempotency-Key: a\n"},
		{name: "not in the last paragraph", msg: "s\n\nCup-Idempotency-Key: a\n\nmore text\n"},
		{name: "block with prose", msg: "s\n\nCup-Idempotency-Key: a\nthis is prose\n"},
		{name: "block starts with continuation", msg: "s\n\n continued\nCup-Idempotency-Key: a\n"},
		{name: "in the body", msg: "s\n\nsee Cup-Idempotency-Key: a\n"},
		{name: "empty"},
	}
	for _, tt := range tests {
		value, ok := changeset.Trailer(tt.msg, source.TrailerIdempotencyKey)
		if value != tt.value || ok != tt.ok {
			t.Errorf("%s: Trailer = %q, %v; want %q, %v", tt.name, value, ok, tt.value, tt.ok)
		}
	}
}
