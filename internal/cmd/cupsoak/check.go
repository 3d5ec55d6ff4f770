package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// checkResult is the verdict of one check: it passed when it has no
// failures. Notes are figures printed either way.
type checkResult struct {
	Name     string
	Failures []string
	Notes    []string
}

// maxPrinted bounds the failures printed per check.
const maxPrinted = 30

func (c *checkResult) print(out io.Writer) {
	verdict := "PASS"
	if len(c.Failures) > 0 {
		verdict = fmt.Sprintf("FAIL (%d)", len(c.Failures))
	}
	fmt.Fprintf(out, "  %-9s %s\n", verdict, c.Name)
	for i, f := range c.Failures {
		if i == maxPrinted {
			fmt.Fprintf(out, "      ... and %d more\n", len(c.Failures)-maxPrinted)
			break
		}
		fmt.Fprintf(out, "      - %s\n", f)
	}
	for _, n := range c.Notes {
		fmt.Fprintf(out, "      %s\n", n)
	}
}

func (c *checkResult) failf(format string, args ...any) {
	c.Failures = append(c.Failures, fmt.Sprintf(format, args...))
}

// describe names a write in failure messages.
func (w *write) describe() string {
	var outcomes []string
	several := slices.ContainsFunc(w.Attempts, func(a attempt) bool { return a.Replica != 0 })
	for _, a := range w.Attempts {
		if several {
			outcomes = append(outcomes, fmt.Sprintf("%s from cupd %d", a.Outcome, a.Replica))
		} else {
			outcomes = append(outcomes, a.Outcome)
		}
	}
	return fmt.Sprintf("%s %s (writer %d seq %d key %s, %s: %s)", w.Op, w.Name, w.Writer, w.Seq, w.Key, w.Via, strings.Join(outcomes, " → "))
}

// checkHistory runs checks 1 to 3: the remote's history st against the
// answers the writes got. pathOf is the file of a resource name.
func checkHistory(writes []*write, st *remoteState, pathOf func(name string) string) []*checkResult {
	c1 := &checkResult{Name: "1 every accepted write is in exactly one commit, the one answered"}
	c2 := &checkResult{Name: "2 no commit for a refused write, at most one for an ambiguous one"}
	c3 := &checkResult{Name: "3 nothing else changed: each commit is its write, the final tree is the last writes"}

	byKey := make(map[string]*write, len(writes))
	for _, w := range writes {
		byKey[w.Key] = w
	}
	commitsOf := map[string][]int{} // key → indices into st.Commits
	if !st.InitialIsAncestor {
		c3.failf("the initial commit %s is not in the first-parent history of the head %s: history was rewritten", st.Initial, st.Head)
	}
	for i, c := range st.Commits {
		if len(c.Parents) != 1 {
			c3.failf("commit %s has %d parents: the branch's history is not a line of single writes", c.ID, len(c.Parents))
		}
		switch {
		case len(c.Keys) == 0:
			c3.failf("commit %s has no Cup-Idempotency-Key trailer: no request accounts for it (changes %s)", c.ID, changedPaths(c))
			continue
		case len(c.Keys) > 1:
			c3.failf("commit %s has %d Cup-Idempotency-Key trailers %q", c.ID, len(c.Keys), c.Keys)
		}
		for _, k := range c.Keys {
			if byKey[k] == nil {
				c3.failf("commit %s records key %q, which no request of this run sent (changes %s)", c.ID, k, changedPaths(c))
				continue
			}
			commitsOf[k] = append(commitsOf[k], i)
		}
	}

	counts := map[class]int{}
	for _, w := range writes {
		idx := commitsOf[w.Key]
		ids := make([]string, len(idx))
		for i, j := range idx {
			ids[i] = st.Commits[j].ID
		}
		switch c := w.Class(); c {
		case accepted:
			counts[c]++
			a := w.acceptedAttempt()
			switch {
			case a.Unchanged && len(idx) != 0:
				c1.failf("%s was answered unchanged, yet commits %v record its key", w.describe(), ids)
			case a.Unchanged:
			case len(idx) == 0:
				c1.failf("lost: %s was accepted (commit %s), but no commit on the branch records its key", w.describe(), a.Commit)
			case len(idx) > 1:
				c1.failf("duplicated: %s is recorded by %d commits %v", w.describe(), len(idx), ids)
			case a.Commit == "":
				c1.failf("%s was accepted without naming its commit; the key is in %s", w.describe(), ids[0])
			case a.Commit != ids[0]:
				c1.failf("%s was answered with commit %s, but the commit recording its key is %s", w.describe(), a.Commit, ids[0])
			}
			// An answer the client dropped named the commit: the
			// repeat, on any replica, must answer it again, as a replay.
			for _, d := range w.Attempts {
				if d.Dropped && d.Commit != "" && (d.Commit != a.Commit || !a.Replayed) {
					c1.failf("%s: the dropped answer named commit %s, but the repeat answered %s (replayed: %v)", w.describe(), d.Commit, a.Commit, a.Replayed)
				}
			}
		case refused:
			counts[c]++
			switch {
			case len(idx) > 1:
				c2.failf("duplicated: %s was refused, yet commits %v record its key", w.describe(), ids)
			case len(idx) == 1 && w.mayHaveLanded():
				// An attempt the client gave up on landed after all.
			case len(idx) > 0:
				c2.failf("%s was refused, yet commits %v record its key", w.describe(), ids)
			}
		case ambiguous:
			counts[c]++
			if len(idx) > 1 {
				c2.failf("duplicated: %s had an ambiguous answer and is recorded by %d commits %v", w.describe(), len(idx), ids)
			}
		}
	}
	landedAmbiguous, refusedLanded := 0, 0
	for _, w := range writes {
		if w.mayHaveLanded() && len(commitsOf[w.Key]) > 0 {
			landedAmbiguous++
			if w.Class() == refused {
				refusedLanded++
			}
		}
	}
	c1.Notes = append(c1.Notes, fmt.Sprintf("%d accepted writes, %d commits on the branch since the initial one", counts[accepted], len(st.Commits)))
	c2.Notes = append(c2.Notes, fmt.Sprintf("%d refused writes; %d ambiguous writes, of which %d landed", counts[refused], counts[ambiguous], landedAmbiguous-refusedLanded))
	if refusedLanded > 0 {
		c2.Notes = append(c2.Notes, fmt.Sprintf("%d writes refused after an ambiguous attempt landed by that attempt", refusedLanded))
	}

	// Each commit is exactly its write.
	for _, c := range st.Commits {
		if len(c.Keys) != 1 || byKey[c.Keys[0]] == nil {
			continue
		}
		w := byKey[c.Keys[0]]
		want := w.file(pathOf)
		if len(c.Changes) != 1 || c.Changes[0].Path != want {
			c3.failf("commit %s of %s changes %s, want only %s", c.ID, w.describe(), changedPaths(c), want)
			continue
		}
		ch := c.Changes[0]
		switch {
		case w.Op == "delete" && ch.Blob != "":
			c3.failf("commit %s of %s writes %s instead of removing it", c.ID, w.describe(), want)
		case w.Op == "put" && ch.Blob == "":
			c3.failf("commit %s of %s removes %s instead of writing it", c.ID, w.describe(), want)
		case w.Op == "put" || w.Op == "external":
			if err := matches(st.Blobs[ch.Blob], w); err != nil {
				c3.failf("commit %s of %s wrote %s other than asked: %v", c.ID, w.describe(), want, err)
			}
		}
	}

	// Each resource's writes landed in the order they were made.
	landed := map[string][]*write{} // resource → writes in commit order
	for _, c := range st.Commits {
		if len(c.Keys) == 1 && byKey[c.Keys[0]] != nil {
			w := byKey[c.Keys[0]]
			landed[w.Name] = append(landed[w.Name], w)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(landed)) {
		ws := landed[name]
		for i := 1; i < len(ws); i++ {
			if ws[i].Seq <= ws[i-1].Seq {
				c3.failf("out of order: %s landed after %s", ws[i].describe(), ws[i-1].describe())
			}
		}
	}

	// The final tree is the initial tree plus each resource's last write
	// that was accepted, or that was ambiguous and landed.
	last := map[string]*write{}
	for _, w := range writes {
		a := w.acceptedAttempt()
		counted := a != nil && !a.Unchanged || w.mayHaveLanded() && len(commitsOf[w.Key]) > 0
		if counted && (last[w.Name] == nil || w.Seq > last[w.Name].Seq) {
			last[w.Name] = w
		}
	}
	expect := map[string]*write{} // path → the write that decides it
	for _, w := range last {
		expect[w.file(pathOf)] = w
	}
	paths := slices.Collect(maps.Keys(st.InitialTree))
	for p := range st.FinalTree {
		if _, ok := st.InitialTree[p]; !ok {
			paths = append(paths, p)
		}
	}
	for p := range expect {
		_, inInitial := st.InitialTree[p]
		_, inFinal := st.FinalTree[p]
		if !inInitial && !inFinal {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	changed := 0
	for _, p := range paths {
		initial, inInitial := st.InitialTree[p]
		final, inFinal := st.FinalTree[p]
		if initial != final {
			changed++
		}
		w := expect[p]
		switch {
		case w == nil && !inInitial:
			c3.failf("%s is at the head, but was not in the initial tree and no accepted write put it", p)
		case w == nil && !inFinal:
			c3.failf("%s was removed, but no accepted write deleted it", p)
		case w == nil && final != initial:
			c3.failf("%s changed (blob %s → %s), but no accepted write touched it", p, initial, final)
		case w == nil:
		case w.Op == "delete" && inFinal:
			c3.failf("%s is at the head, but the last write of it deleted it: %s", p, w.describe())
		case w.Op == "delete":
		case !inFinal:
			c3.failf("%s is missing at the head, but the last write of it put it: %s", p, w.describe())
		case inInitial && final == initial:
			c3.failf("%s still has its initial content, but the last write of it put it: %s", p, w.describe())
		default:
			if err := matches(st.Blobs[final], w); err != nil {
				c3.failf("%s at the head is not what the last write of it put (%s): %v", p, w.describe(), err)
			}
		}
	}
	c3.Notes = append(c3.Notes, fmt.Sprintf("%d files at the head, %d differ from the initial tree; %d files written",
		len(st.FinalTree), changed, len(last)))
	for _, c := range []*checkResult{c1, c2, c3} {
		slices.SortStableFunc(c.Failures, func(a, b string) int { return cmp.Compare(a, b) })
	}
	return []*checkResult{c1, c2, c3}
}

func changedPaths(c remoteCommit) string {
	var ps []string
	for _, ch := range c.Changes {
		op := "write"
		if ch.Blob == "" {
			op = "remove"
		}
		ps = append(ps, op+" "+ch.Path)
	}
	if len(ps) == 0 {
		return "nothing"
	}
	return strings.Join(ps, ", ")
}

// matches reports how the file content differs from the resource put
// asked for, or nil.
func matches(content []byte, w *write) error {
	if content == nil {
		return fmt.Errorf("content not read")
	}
	if w.Op == "external" {
		if !bytes.Equal(content, w.Content) {
			return fmt.Errorf("content %.200q, want %.200q", content, w.Content)
		}
		return nil
	}
	var f struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Namespace string            `json:"namespace"`
			Name      string            `json:"name"`
			Labels    map[string]string `json:"labels"`
		} `json:"metadata"`
		Spec map[string]any `json:"spec"`
	}
	if err := json.Unmarshal(content, &f); err != nil {
		return fmt.Errorf("not a resource in JSON: %v: %.200q", err, content)
	}
	var diffs []string
	if got, want := f.APIVersion+" "+f.Kind, group+"/"+version+" Item"; got != want {
		diffs = append(diffs, fmt.Sprintf("apiVersion and kind %q, want %q", got, want))
	}
	if f.Metadata.Namespace != namespace || f.Metadata.Name != w.Name {
		diffs = append(diffs, fmt.Sprintf("names %s/%s, want %s/%s", f.Metadata.Namespace, f.Metadata.Name, namespace, w.Name))
	}
	if !maps.Equal(f.Metadata.Labels, w.Labels) {
		diffs = append(diffs, fmt.Sprintf("labels %v, want %v", f.Metadata.Labels, w.Labels))
	}
	if !reflect.DeepEqual(f.Spec, w.Spec) {
		diffs = append(diffs, fmt.Sprintf("spec %v, want %v", f.Spec, w.Spec))
	}
	if len(diffs) > 0 {
		return fmt.Errorf("%s", strings.Join(diffs, "; "))
	}
	return nil
}
