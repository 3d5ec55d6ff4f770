// The fake's HTTP handlers for the Gitea API routes it serves, and their
// helpers.

package giteatest

import (
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// text writes a response that is not JSON, as a proxy in front of Gitea
// sends.
func text(w http.ResponseWriter, code int, contentType, body string) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(code)
	io.WriteString(w, body)
}

func (f *Fake) unexpected(w http.ResponseWriter, r *http.Request) {
	f.t.Errorf("giteatest: unexpected call %s %s", r.Method, r.URL)
	f.apiError(w, http.StatusNotFound, "not found")
}

// repoRoute answers calls for other repositories 404, as Gitea does.
func (f *Fake) repoRoute(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !strings.EqualFold(r.PathValue("owner"), f.owner) || !strings.EqualFold(r.PathValue("repo"), f.repo) {
			f.apiError(w, http.StatusNotFound, "not found")
			return
		}
		h(w, r)
	}
}

func (f *Fake) version(w http.ResponseWriter, _ *http.Request) {
	f.json(w, http.StatusOK, map[string]string{"version": Version})
}

func (f *Fake) listPulls(w http.ResponseWriter, r *http.Request) {
	state := r.URL.Query().Get("state")
	if state == "" {
		state = "open"
	}
	f.mu.Lock()
	var out []*apiPull
	// Gitea's default order: newest first.
	for i := len(f.pulls) - 1; i >= 0; i-- {
		pr := f.pulls[i]
		if (state == "open" && pr.closed) || (state == "closed" && !pr.closed) {
			continue
		}
		out = append(out, f.apiPull(pr))
	}
	f.mu.Unlock()
	page(f, w, r, out)
}

func (f *Fake) getPull(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	pr := f.pull(r.PathValue("index"))
	if pr == nil {
		f.apiError(w, http.StatusNotFound, "not found")
		return
	}
	f.json(w, http.StatusOK, f.apiPull(pr))
}

// getPullByBaseHead answers GET /repos/{owner}/{repo}/pulls/{base}/{head}
// (Gitea 1.22 and later) as Gitea 1.26 does: with one pull request of the
// two branches in whatever state, the first opened, or 404. A head
// "owner:branch" names a branch of a fork, which the fake has none of.
func (f *Fake) getPullByBaseHead(w http.ResponseWriter, r *http.Request) {
	base, head := r.PathValue("base"), r.PathValue("head")
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, pr := range f.pulls {
		if pr.base == base && pr.head == head {
			f.json(w, http.StatusOK, f.apiPull(pr))
			return
		}
	}
	f.apiError(w, http.StatusNotFound, "not found")
}

// createOption is Gitea's CreatePullRequestOption.
type createOption struct {
	Head      string     `json:"head"`
	Base      string     `json:"base"`
	Title     string     `json:"title"`
	Body      string     `json:"body"`
	Assignee  string     `json:"assignee"`
	Assignees []string   `json:"assignees"`
	Reviewers []string   `json:"reviewers"`
	Milestone int64      `json:"milestone"`
	Labels    []int64    `json:"labels"`
	Deadline  *time.Time `json:"due_date"`
}

func (f *Fake) createPull(w http.ResponseWriter, r *http.Request) {
	var opt createOption
	if !f.decode(w, r, &opt) {
		return
	}
	switch {
	case opt.Head == "":
		f.apiError(w, http.StatusUnprocessableEntity, "[Head]: Required")
		return
	case opt.Base == "":
		f.apiError(w, http.StatusUnprocessableEntity, "[Base]: Required")
		return
	case opt.Title == "":
		f.apiError(w, http.StatusUnprocessableEntity, "[Title]: Required")
		return
	case opt.Head == opt.Base:
		f.apiError(w, http.StatusUnprocessableEntity, "Invalid PullRequest: There are no changes between the head and the base")
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.hasBranch(opt.Head) || !f.hasBranch(opt.Base) {
		// Gitea's parseCompareInfo: an unknown head or base is a 404.
		f.apiError(w, http.StatusNotFound, "not found")
		return
	}
	for _, pr := range f.pulls {
		if !pr.closed && pr.head == opt.Head && pr.base == opt.Base {
			f.apiError(w, http.StatusConflict, fmt.Sprintf(
				"pull request already exists for these targets [id: %d, issue_id: %d, head_repo_id: 1, base_repo_id: 1, head_branch: %s, base_branch: %s]",
				pr.index, pr.index, pr.head, pr.base))
			return
		}
	}
	now := f.tick()
	pr := &pull{
		index:   int64(len(f.pulls) + 1),
		title:   opt.Title,
		body:    opt.Body,
		head:    opt.Head,
		base:    opt.Base,
		created: now,
		updated: now,
		headSHA: sha("branch", opt.Head),
		baseSHA: sha("branch", opt.Base),
	}
	pr.mergeBase = pr.baseSHA
	// Gitea drops ids that name no label.
	for _, id := range opt.Labels {
		if f.label(id) != nil && !slices.Contains(pr.labels, id) {
			pr.labels = append(pr.labels, id)
		}
	}
	f.pulls = append(f.pulls, pr)
	f.json(w, http.StatusCreated, f.apiPull(pr))
}

// editOption is Gitea's EditPullRequestOption, as far as the fake applies it.
type editOption struct {
	Title  string  `json:"title"`
	Body   *string `json:"body"`
	Base   string  `json:"base"`
	Labels []int64 `json:"labels"`
	State  *string `json:"state"`
}

func (f *Fake) editPull(w http.ResponseWriter, r *http.Request) {
	var opt editOption
	if !f.decode(w, r, &opt) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	pr := f.pull(r.PathValue("index"))
	if pr == nil {
		f.apiError(w, http.StatusNotFound, "not found")
		return
	}
	if opt.Base != "" && opt.Base != pr.base {
		f.t.Errorf("giteatest: changing a pull request's base is not supported")
	}
	if opt.State != nil {
		if pr.merged {
			f.apiError(w, http.StatusPreconditionFailed, "cannot change state of this pull request, it was already merged")
			return
		}
		f.t.Errorf("giteatest: changing a pull request's state is not supported")
	}
	if opt.Title != "" {
		pr.title = opt.Title
	}
	if opt.Body != nil {
		pr.body = *opt.Body
	}
	if opt.Labels != nil {
		pr.labels = nil
		for _, id := range opt.Labels {
			if f.label(id) != nil {
				pr.labels = append(pr.labels, id)
			}
		}
	}
	pr.updated = f.tick()
	// Gitea answers an edit 201 Created.
	f.json(w, http.StatusCreated, f.apiPull(pr))
}

// wip reports whether title has one of Gitea's default work-in-progress
// prefixes, which is what Gitea 1.22 and later report as draft.
func wip(title string) bool {
	for _, p := range []string{"WIP:", "[WIP]"} {
		if len(title) >= len(p) && strings.EqualFold(title[:len(p)], p) {
			return true
		}
	}
	return false
}

func (f *Fake) listLabels(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	out := make([]*apiLabel, 0, len(f.labels))
	for _, l := range f.labels {
		out = append(out, f.apiLabel(l))
	}
	f.mu.Unlock()
	page(f, w, r, out)
}

// createLabelOption is Gitea's CreateLabelOption.
type createLabelOption struct {
	Name        string `json:"name"`
	Color       string `json:"color"`
	Description string `json:"description"`
	Exclusive   bool   `json:"exclusive"`
	IsArchived  bool   `json:"is_archived"`
}

var colorRE = regexp.MustCompile(`^#?[0-9a-fA-F]{6}$`)

func (f *Fake) createLabel(w http.ResponseWriter, r *http.Request) {
	var opt createLabelOption
	if !f.decode(w, r, &opt) {
		return
	}
	switch {
	case strings.TrimSpace(opt.Name) == "":
		f.apiError(w, http.StatusUnprocessableEntity, "[Name]: Required")
		return
	case !colorRE.MatchString(opt.Color):
		f.apiError(w, http.StatusUnprocessableEntity, "invalid color")
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	// Gitea does not require label names to be unique.
	l := f.addLabel(opt.Name, "#"+strings.TrimPrefix(opt.Color, "#"), opt.Description, opt.Exclusive)
	f.json(w, http.StatusCreated, f.apiLabel(l))
}

func (f *Fake) addLabel(name, color, descr string, exclusive bool) *label {
	l := &label{id: int64(len(f.labels) + 1), name: name, color: strings.ToLower(color), descr: descr, exclusive: exclusive}
	f.labels = append(f.labels, l)
	return l
}

// page writes one page of items as Gitea does: page is 1-based, limit is
// capped at MaxPageSize, and the Link header names the next, last, first
// and previous pages.
func page[T any](f *Fake, w http.ResponseWriter, r *http.Request, items []T) {
	q := r.URL.Query()
	num, _ := strconv.Atoi(q.Get("page"))
	num = max(num, 1)
	limit, _ := strconv.Atoi(q.Get("limit"))
	if limit <= 0 || limit > MaxPageSize {
		limit = MaxPageSize
	}
	total := len(items)
	pages := (total + limit - 1) / limit
	link := func(n int, rel string) string {
		u := *r.URL
		v := u.Query()
		v.Set("page", strconv.Itoa(n))
		u.RawQuery = v.Encode()
		return fmt.Sprintf("<%s%s>; rel=%q", f.URL(), u.RequestURI()[1:], rel)
	}
	var links []string
	if num < pages {
		links = append(links, link(num+1, "next"), link(pages, "last"))
	}
	if num > 1 {
		links = append(links, link(1, "first"), link(min(num-1, max(pages, 1)), "prev"))
	}
	if len(links) > 0 {
		w.Header().Set("Link", strings.Join(links, ","))
	}
	w.Header().Set("X-Total-Count", strconv.Itoa(total))
	start := min((num-1)*limit, total)
	f.json(w, http.StatusOK, items[start:min(start+limit, total)])
}

// pull returns the pull request with index id, or nil. f.mu is held.
func (f *Fake) pull(id string) *pull {
	i, err := strconv.Atoi(id)
	if err != nil || i < 1 || i > len(f.pulls) {
		return nil
	}
	return f.pulls[i-1]
}

// label returns the label with the id, or nil. f.mu is held.
func (f *Fake) label(id int64) *label {
	if id < 1 || id > int64(len(f.labels)) {
		return nil
	}
	return f.labels[id-1]
}

// tick returns the time of a change: now, in whole seconds, as Gitea
// stores it.
func (f *Fake) tick() time.Time {
	return time.Now().UTC().Truncate(time.Second)
}

func (f *Fake) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		f.apiError(w, http.StatusUnprocessableEntity, "[]: "+err.Error())
		return false
	}
	return true
}

// apiError writes Gitea's error body, {"message": ..., "url": ...}.
func (f *Fake) apiError(w http.ResponseWriter, code int, msg string) {
	f.json(w, code, map[string]string{"message": msg, "url": f.URL() + "api/swagger"})
}

func (f *Fake) json(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json;charset=utf-8")
	w.WriteHeader(code)
	if err := json.NewEncoder(w).Encode(v); err != nil {
		f.t.Errorf("giteatest: encoding a response: %v", err)
	}
}

func sha(parts ...string) string {
	h := sha1.Sum([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(h[:])
}
