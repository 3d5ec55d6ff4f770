package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/cup-dev/cup/source"
)

// gitCmd runs the git command with a hermetic environment: an empty home,
// no system configuration, no prompts.
type gitCmd struct{ env []string }

func newGit(home string) *gitCmd {
	_ = os.MkdirAll(home, 0o755)
	env := []string{
		"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0", "LC_ALL=C",
		"GIT_AUTHOR_NAME=cupsoak", "GIT_AUTHOR_EMAIL=cupsoak@localhost",
		"GIT_COMMITTER_NAME=cupsoak", "GIT_COMMITTER_EMAIL=cupsoak@localhost",
	}
	if p, ok := os.LookupEnv("PATH"); ok {
		env = append(env, "PATH="+p)
	}
	return &gitCmd{env: env}
}

// run runs git in dir (none when empty) and returns its standard output.
func (g *gitCmd) run(ctx context.Context, dir string, args ...string) (string, error) {
	out, err := g.runIn(ctx, dir, nil, args...)
	return string(out), err
}

func (g *gitCmd) runIn(ctx context.Context, dir string, stdin io.Reader, args ...string) ([]byte, error) {
	if dir != "" {
		args = append([]string{"-C", dir}, args...)
	}
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Env = g.env
	cmd.Stdin = stdin
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

func (g *gitCmd) revParse(ctx context.Context, dir, rev string) (string, error) {
	out, err := g.run(ctx, dir, "rev-parse", "--verify", "--quiet", rev+"^{commit}")
	return strings.TrimSpace(out), err
}

// fsck runs git fsck --strict on the repository at dir and returns its
// output and an error when it found anything wrong.
func (g *gitCmd) fsck(ctx context.Context, dir string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", "-C", dir, "fsck", "--strict", "--full", "--no-dangling", "--no-progress")
	cmd.Env = g.env
	out, err := cmd.CombinedOutput()
	msg := strings.TrimSpace(string(out))
	if err != nil {
		return fmt.Sprintf("git -C %s fsck --strict --full: %v: %.2000s", dir, err, msg), err
	}
	if msg != "" {
		return fmt.Sprintf("git -C %s fsck --strict --full reported: %.2000s", dir, msg), errors.New("fsck reported problems")
	}
	return "", nil
}

// countObjects summarises git count-objects -v.
func (g *gitCmd) countObjects(ctx context.Context, dir string) string {
	out, err := g.run(ctx, dir, "count-objects", "-v", "-H")
	if err != nil {
		return err.Error()
	}
	return "objects: " + strings.Join(strings.Fields(strings.ReplaceAll(out, ":", "")), " ")
}

// remoteState is the remote branch's history since the initial commit.
type remoteState struct {
	Initial, Head string
	// InitialIsAncestor reports whether the initial commit is in the
	// head's first-parent history.
	InitialIsAncestor bool
	// Commits are the first-parent history from the initial commit
	// (excluded) to the head, oldest first.
	Commits []remoteCommit
	// InitialTree and FinalTree map each file's path to its blob id.
	InitialTree, FinalTree map[string]string
	// Blobs holds the content of every blob a commit wrote and of every
	// file of the final tree that differs from the initial one.
	Blobs map[string][]byte
}

type remoteCommit struct {
	ID      string
	Parents []string
	// Keys are the values of the commit's Cup-Idempotency-Key trailers.
	Keys    []string
	Changes []fileChange // against the first parent
}

// fileChange is a file a commit changed: its new blob, or "" when removed.
type fileChange struct{ Path, Blob string }

const zeroID = "0000000000000000000000000000000000000000"

// readRemote reads the history of ref in the bare repository at dir from
// initial on, with the git command.
func readRemote(ctx context.Context, g *gitCmd, dir, initial, ref string) (*remoteState, error) {
	head, err := g.revParse(ctx, dir, ref)
	if err != nil {
		return nil, err
	}
	st := &remoteState{Initial: initial, Head: head, Blobs: map[string][]byte{}}
	fp, err := g.run(ctx, dir, "rev-list", "--first-parent", head)
	if err != nil {
		return nil, err
	}
	st.InitialIsAncestor = slices.Contains(strings.Fields(fp), initial)
	log, err := g.run(ctx, dir, "log", "--first-parent", "--diff-merges=first-parent", "--raw", "--no-renames", "--no-abbrev",
		"--format=%x1e%H%x1f%P%x1f%(trailers:key="+source.TrailerIdempotencyKey+",valueonly,separator=%x1d)%x1f",
		initial+".."+head)
	if err != nil {
		return nil, err
	}
	if st.Commits, err = parseLog(log); err != nil {
		return nil, err
	}
	if st.InitialTree, err = lsTree(ctx, g, dir, initial); err != nil {
		return nil, err
	}
	if st.FinalTree, err = lsTree(ctx, g, dir, head); err != nil {
		return nil, err
	}
	var want []string
	for _, c := range st.Commits {
		for _, ch := range c.Changes {
			if ch.Blob != "" {
				want = append(want, ch.Blob)
			}
		}
	}
	for p, b := range st.FinalTree {
		if st.InitialTree[p] != b {
			want = append(want, b)
		}
	}
	slices.Sort(want)
	want = slices.Compact(want)
	if st.Blobs, err = catBlobs(ctx, g, dir, want); err != nil {
		return nil, err
	}
	return st, nil
}

// parseLog parses git log's output in readRemote's format, newest first,
// into commits oldest first.
func parseLog(log string) ([]remoteCommit, error) {
	var commits []remoteCommit
	for rec := range strings.SplitSeq(log, "\x1e") {
		if strings.TrimSpace(rec) == "" {
			continue
		}
		f := strings.SplitN(rec, "\x1f", 4)
		if len(f) != 4 {
			return nil, fmt.Errorf("git log: unexpected record %.200q", rec)
		}
		c := remoteCommit{ID: f[0], Parents: strings.Fields(f[1])}
		for k := range strings.SplitSeq(strings.TrimSpace(f[2]), "\x1d") {
			if k = strings.TrimSpace(k); k != "" {
				c.Keys = append(c.Keys, k)
			}
		}
		for line := range strings.Lines(f[3]) {
			line = strings.TrimRight(line, "\n")
			if line == "" {
				continue
			}
			// :100644 100644 <old> <new> M<TAB>path
			meta, path, ok := strings.Cut(line, "\t")
			fields := strings.Fields(meta)
			if !ok || !strings.HasPrefix(line, ":") || len(fields) != 5 {
				return nil, fmt.Errorf("git log --raw: unexpected line %q", line)
			}
			blob := fields[3]
			if blob == zeroID {
				blob = ""
			}
			if strings.HasPrefix(path, `"`) {
				if p, err := strconv.Unquote(path); err == nil {
					path = p
				}
			}
			c.Changes = append(c.Changes, fileChange{Path: path, Blob: blob})
		}
		commits = append(commits, c)
	}
	slices.Reverse(commits)
	return commits, nil
}

// lsTree maps each file of rev's tree to its blob id.
func lsTree(ctx context.Context, g *gitCmd, dir, rev string) (map[string]string, error) {
	out, err := g.runIn(ctx, dir, nil, "ls-tree", "-r", "-z", "--full-tree", rev)
	if err != nil {
		return nil, err
	}
	files := map[string]string{}
	for entry := range bytes.SplitSeq(out, []byte{0}) {
		if len(entry) == 0 {
			continue
		}
		// <mode> SP <type> SP <object> TAB <file>
		meta, path, ok := strings.Cut(string(entry), "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 3 {
			return nil, fmt.Errorf("git ls-tree: unexpected entry %q", entry)
		}
		files[path] = f[2]
	}
	return files, nil
}

// catBlobs reads the blobs ids with one git cat-file --batch.
func catBlobs(ctx context.Context, g *gitCmd, dir string, ids []string) (map[string][]byte, error) {
	blobs := make(map[string][]byte, len(ids))
	if len(ids) == 0 {
		return blobs, nil
	}
	out, err := g.runIn(ctx, dir, strings.NewReader(strings.Join(ids, "\n")+"\n"), "cat-file", "--batch")
	if err != nil {
		return nil, err
	}
	r := bufio.NewReader(bytes.NewReader(out))
	for range ids {
		header, err := r.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("git cat-file --batch: %w", err)
		}
		f := strings.Fields(header)
		if len(f) != 3 {
			return nil, fmt.Errorf("git cat-file --batch: %q", strings.TrimSpace(header))
		}
		n, err := strconv.Atoi(f[2])
		if err != nil {
			return nil, err
		}
		b := make([]byte, n+1)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, fmt.Errorf("git cat-file --batch: %w", err)
		}
		blobs[f[0]] = b[:n]
	}
	return blobs, nil
}
