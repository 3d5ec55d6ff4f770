package githubtest

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// The response shapes below follow GitHub's REST schemas
// ("pull-request-simple" for lists, "pull-request" otherwise, "label",
// "simple-user", "repository"), fields the fake has no use for included
// as GitHub sends them (null, empty or fixed), so that a client relying on
// a field GitHub does not send for an endpoint fails here as it would
// against GitHub: the list endpoint, for one, has no "merged".

type user struct {
	Login     string `json:"login"`
	ID        int64  `json:"id"`
	NodeID    string `json:"node_id"`
	AvatarURL string `json:"avatar_url"`
	URL       string `json:"url"`
	HTMLURL   string `json:"html_url"`
	Type      string `json:"type"`
	SiteAdmin bool   `json:"site_admin"`
}

type repository struct {
	ID            int64  `json:"id"`
	NodeID        string `json:"node_id"`
	Name          string `json:"name"`
	FullName      string `json:"full_name"`
	Owner         user   `json:"owner"`
	Private       bool   `json:"private"`
	HTMLURL       string `json:"html_url"`
	URL           string `json:"url"`
	Fork          bool   `json:"fork"`
	DefaultBranch string `json:"default_branch"`
}

type branchRef struct {
	Label string     `json:"label"`
	Ref   string     `json:"ref"`
	SHA   string     `json:"sha"`
	User  user       `json:"user"`
	Repo  repository `json:"repo"`
}

type label struct {
	ID          int64   `json:"id"`
	NodeID      string  `json:"node_id"`
	URL         string  `json:"url"`
	Name        string  `json:"name"`
	Color       string  `json:"color"`
	Default     bool    `json:"default"`
	Description *string `json:"description"`
}

type href struct {
	Href string `json:"href"`
}

type links struct {
	Self           href `json:"self"`
	HTML           href `json:"html"`
	Issue          href `json:"issue"`
	Comments       href `json:"comments"`
	ReviewComments href `json:"review_comments"`
	ReviewComment  href `json:"review_comment"`
	Commits        href `json:"commits"`
	Statuses       href `json:"statuses"`
}

type simplePull struct {
	URL                string     `json:"url"`
	ID                 int64      `json:"id"`
	NodeID             string     `json:"node_id"`
	HTMLURL            string     `json:"html_url"`
	DiffURL            string     `json:"diff_url"`
	PatchURL           string     `json:"patch_url"`
	IssueURL           string     `json:"issue_url"`
	CommitsURL         string     `json:"commits_url"`
	ReviewCommentsURL  string     `json:"review_comments_url"`
	ReviewCommentURL   string     `json:"review_comment_url"`
	CommentsURL        string     `json:"comments_url"`
	StatusesURL        string     `json:"statuses_url"`
	Number             int        `json:"number"`
	State              string     `json:"state"`
	Locked             bool       `json:"locked"`
	Title              string     `json:"title"`
	User               user       `json:"user"`
	Body               *string    `json:"body"`
	Labels             []label    `json:"labels"`
	Milestone          *struct{}  `json:"milestone"`
	ActiveLockReason   *string    `json:"active_lock_reason"`
	CreatedAt          string     `json:"created_at"`
	UpdatedAt          string     `json:"updated_at"`
	ClosedAt           *string    `json:"closed_at"`
	MergedAt           *string    `json:"merged_at"`
	MergeCommitSHA     *string    `json:"merge_commit_sha"`
	Assignee           *user      `json:"assignee"`
	Assignees          []user     `json:"assignees"`
	RequestedReviewers []user     `json:"requested_reviewers"`
	RequestedTeams     []struct{} `json:"requested_teams"`
	Head               branchRef  `json:"head"`
	Base               branchRef  `json:"base"`
	Links              links      `json:"_links"`
	AuthorAssociation  string     `json:"author_association"`
	AutoMerge          *struct{}  `json:"auto_merge"`
	Draft              bool       `json:"draft"`
}

type fullPull struct {
	simplePull
	Merged              bool   `json:"merged"`
	Mergeable           *bool  `json:"mergeable"`
	Rebaseable          *bool  `json:"rebaseable"`
	MergeableState      string `json:"mergeable_state"`
	MergedBy            *user  `json:"merged_by"`
	Comments            int    `json:"comments"`
	ReviewComments      int    `json:"review_comments"`
	MaintainerCanModify bool   `json:"maintainer_can_modify"`
	Commits             int    `json:"commits"`
	Additions           int    `json:"additions"`
	Deletions           int    `json:"deletions"`
	ChangedFiles        int    `json:"changed_files"`
}

func (f *Fake) userJSON(r *http.Request, login string) user {
	id := int64(len(login)) * 7919
	kind := "User"
	if strings.EqualFold(login, f.owner) {
		kind = "Organization"
	}
	return user{
		Login: login, ID: id, NodeID: fmt.Sprintf("U_fake%d", id),
		AvatarURL: f.base(r) + "/avatars/u/" + login,
		URL:       f.base(r) + "/api/v3/users/" + login,
		HTMLURL:   f.base(r) + "/" + login,
		Type:      kind,
	}
}

func (f *Fake) repoJSON(r *http.Request, owner string) repository {
	full := owner + "/" + f.repo
	return repository{
		ID: int64(len(full)) * 104729, NodeID: "R_fake" + full, Name: f.repo, FullName: full,
		Owner: f.userJSON(r, owner), HTMLURL: f.base(r) + "/" + full, URL: f.base(r) + "/api/v3/repos/" + full,
		Fork: !strings.EqualFold(owner, f.owner), DefaultBranch: "main",
	}
}

func (f *Fake) labelsLocked(pr *pull) []label {
	out := []label{}
	for _, name := range pr.labels {
		id, ok := f.labelIDs[name]
		if !ok {
			id = int64(len(f.labelIDs) + 1)
			f.labelIDs[name] = id
		}
		out = append(out, label{
			ID: id, NodeID: fmt.Sprintf("LA_fake%d", id), Name: name, Color: "ededed",
			URL: fmt.Sprintf("%s/api/v3/repos/%s/%s/labels/%s", f.srv.URL, f.owner, f.repo, name),
		})
	}
	return out
}

func (f *Fake) simpleLocked(pr *pull, r *http.Request) *simplePull {
	api := fmt.Sprintf("%s/api/v3/repos/%s/%s", f.base(r), f.owner, f.repo)
	html := fmt.Sprintf("%s/%s/%s/pull/%d", f.base(r), f.owner, f.repo, pr.number)
	self := fmt.Sprintf("%s/pulls/%d", api, pr.number)
	issue := fmt.Sprintf("%s/issues/%d", api, pr.number)
	sha, _ := f.branch(pr.head)
	if sha == "" {
		sha = strings.Repeat("0", 40)
	}
	out := &simplePull{
		URL: self, ID: int64(1_000_000 + pr.number), NodeID: fmt.Sprintf("PR_fake%d", pr.number),
		HTMLURL: html, DiffURL: html + ".diff", PatchURL: html + ".patch", IssueURL: issue,
		CommitsURL: self + "/commits", ReviewCommentsURL: self + "/comments",
		ReviewCommentURL: api + "/pulls/comments{/number}", CommentsURL: issue + "/comments",
		StatusesURL: api + "/statuses/" + sha,
		Number:      pr.number, State: "open", Title: pr.title, User: f.userJSON(r, "cup-bot"),
		Labels:    f.labelsLocked(pr),
		CreatedAt: timestamp(pr.created), UpdatedAt: timestamp(pr.updated),
		Assignees: []user{}, RequestedReviewers: []user{}, RequestedTeams: []struct{}{},
		Head: branchRef{
			Label: pr.headOwner + ":" + pr.head, Ref: pr.head, SHA: sha,
			User: f.userJSON(r, pr.headOwner), Repo: f.repoJSON(r, pr.headOwner),
		},
		Base: branchRef{
			Label: f.owner + ":" + pr.base, Ref: pr.base, SHA: f.branches[pr.base],
			User: f.userJSON(r, f.owner), Repo: f.repoJSON(r, f.owner),
		},
		Links: links{
			Self: href{self}, HTML: href{html}, Issue: href{issue}, Comments: href{issue + "/comments"},
			ReviewComments: href{self + "/comments"}, ReviewComment: href{api + "/pulls/comments{/number}"},
			Commits: href{self + "/commits"}, Statuses: href{api + "/statuses/" + sha},
		},
		AuthorAssociation: "CONTRIBUTOR",
		Draft:             pr.draft,
	}
	if pr.body != "" {
		out.Body = &pr.body
	}
	if !pr.open {
		out.State = "closed"
		out.ClosedAt = ptr(timestamp(pr.closed))
	}
	if pr.merged {
		out.MergedAt = out.ClosedAt
		out.MergeCommitSHA = ptr(strings.Repeat("a", 40))
	}
	return out
}

func (f *Fake) fullLocked(pr *pull, r *http.Request) *fullPull {
	out := &fullPull{simplePull: *f.simpleLocked(pr, r), Merged: pr.merged, MaintainerCanModify: false, Commits: 1, Additions: 1, ChangedFiles: 1}
	if pr.open {
		out.Mergeable, out.Rebaseable, out.MergeableState = ptr(true), ptr(true), "clean"
	} else {
		out.MergeableState = "unknown"
	}
	if pr.merged {
		u := f.userJSON(r, "reviewer")
		out.MergedBy = &u
	}
	return out
}

func timestamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func ptr[T any](v T) *T { return &v }
