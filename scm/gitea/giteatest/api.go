// The Gitea API's wire types, and the fake's conversions of its state to
// them.

package giteatest

import (
	"fmt"
	"net/url"
	"strings"
	"time"
)

// The response shapes below are Gitea's (modules/structs), field for field
// where the fake has a value.

type apiUser struct {
	ID        int64  `json:"id"`
	Login     string `json:"login"`
	LoginName string `json:"login_name"`
	FullName  string `json:"full_name"`
	Email     string `json:"email"`
	AvatarURL string `json:"avatar_url"`
	HTMLURL   string `json:"html_url"`
	IsAdmin   bool   `json:"is_admin"`
	Username  string `json:"username"`
}

type apiRepo struct {
	ID            int64    `json:"id"`
	Owner         *apiUser `json:"owner"`
	Name          string   `json:"name"`
	FullName      string   `json:"full_name"`
	Private       bool     `json:"private"`
	HTMLURL       string   `json:"html_url"`
	CloneURL      string   `json:"clone_url"`
	DefaultBranch string   `json:"default_branch"`
}

type apiBranch struct {
	Label  string   `json:"label"`
	Ref    string   `json:"ref"`
	Sha    string   `json:"sha"`
	RepoID int64    `json:"repo_id"`
	Repo   *apiRepo `json:"repo"`
}

type apiLabel struct {
	ID          int64  `json:"id"`
	Name        string `json:"name"`
	Exclusive   bool   `json:"exclusive"`
	IsArchived  bool   `json:"is_archived"`
	Color       string `json:"color"`
	Description string `json:"description"`
	URL         string `json:"url"`
}

type apiPull struct {
	ID                      int64       `json:"id"`
	URL                     string      `json:"url"`
	Number                  int64       `json:"number"`
	User                    *apiUser    `json:"user"`
	Title                   string      `json:"title"`
	Body                    string      `json:"body"`
	Labels                  []*apiLabel `json:"labels"`
	Milestone               any         `json:"milestone"`
	Assignee                *apiUser    `json:"assignee"`
	Assignees               []*apiUser  `json:"assignees"`
	RequestedReviewers      []*apiUser  `json:"requested_reviewers"`
	RequestedReviewersTeams []any       `json:"requested_reviewers_teams"`
	State                   string      `json:"state"`
	Draft                   bool        `json:"draft"`
	IsLocked                bool        `json:"is_locked"`
	Comments                int         `json:"comments"`
	ReviewComments          int         `json:"review_comments"`
	Additions               int         `json:"additions"`
	Deletions               int         `json:"deletions"`
	ChangedFiles            int         `json:"changed_files"`
	HTMLURL                 string      `json:"html_url"`
	DiffURL                 string      `json:"diff_url"`
	PatchURL                string      `json:"patch_url"`
	Mergeable               bool        `json:"mergeable"`
	Merged                  bool        `json:"merged"`
	MergedAt                *time.Time  `json:"merged_at"`
	MergeCommitSHA          *string     `json:"merge_commit_sha"`
	MergedBy                *apiUser    `json:"merged_by"`
	AllowMaintainerEdit     bool        `json:"allow_maintainer_edit"`
	Base                    *apiBranch  `json:"base"`
	Head                    *apiBranch  `json:"head"`
	MergeBase               string      `json:"merge_base"`
	DueDate                 *time.Time  `json:"due_date"`
	CreatedAt               *time.Time  `json:"created_at"`
	UpdatedAt               *time.Time  `json:"updated_at"`
	ClosedAt                *time.Time  `json:"closed_at"`
	PinOrder                int         `json:"pin_order"`
}

func (f *Fake) apiUser() *apiUser {
	return &apiUser{
		ID: 1, Login: "cup-bot", FullName: "cup", Email: "cup-bot@noreply.localhost",
		AvatarURL: f.URL() + "avatars/1", HTMLURL: f.URL() + "cup-bot", Username: "cup-bot",
	}
}

func (f *Fake) apiRepo() *apiRepo {
	owner := f.apiUser()
	owner.ID, owner.Login, owner.Username, owner.HTMLURL = 2, f.owner, f.owner, f.URL()+url.PathEscape(f.owner)
	return &apiRepo{
		ID: 1, Owner: owner, Name: f.repo, FullName: f.owner + "/" + f.repo,
		HTMLURL: f.repoURL(), CloneURL: f.repoURL() + ".git", DefaultBranch: "main",
	}
}

func (f *Fake) repoURL() string {
	return f.URL() + url.PathEscape(f.owner) + "/" + url.PathEscape(f.repo)
}

func (f *Fake) apiLabel(l *label) *apiLabel {
	return &apiLabel{
		ID: l.id, Name: l.name, Exclusive: l.exclusive, Description: l.descr,
		// Gitea stores "#rrggbb" and answers without the "#".
		Color: strings.TrimPrefix(l.color, "#"),
		URL:   fmt.Sprintf("%s/api/v1/repos/%s/%s/labels/%d", f.srv.URL, f.owner, f.repo, l.id),
	}
}

// apiPull renders pr as Gitea's services/convert.ToAPIPullRequest does.
// f.mu is held.
func (f *Fake) apiPull(pr *pull) *apiPull {
	html := fmt.Sprintf("%s/pulls/%d", f.repoURL(), pr.index)
	created, updated := pr.created, pr.updated
	out := &apiPull{
		ID:      pr.index + 100,
		URL:     html,
		Number:  pr.index,
		User:    f.apiUser(),
		Title:   pr.title,
		Body:    pr.body,
		Labels:  []*apiLabel{},
		State:   "open",
		Draft:   wip(pr.title),
		HTMLURL: html, DiffURL: html + ".diff", PatchURL: html + ".patch",
		Mergeable:           !pr.closed,
		Merged:              pr.merged,
		MergedAt:            pr.mergedAt,
		AllowMaintainerEdit: false,
		Base:                &apiBranch{Label: pr.base, Ref: pr.base, Sha: pr.baseSHA, RepoID: 1, Repo: f.apiRepo()},
		Head:                &apiBranch{Label: pr.head, Ref: pr.head, Sha: pr.headSHA, RepoID: 1, Repo: f.apiRepo()},
		MergeBase:           pr.mergeBase,
		CreatedAt:           &created,
		UpdatedAt:           &updated,
		ClosedAt:            pr.closedAt,
	}
	if !f.hasBranch(pr.head) {
		out.Head.Ref = fmt.Sprintf("refs/pull/%d/head", pr.index)
	}
	if pr.closed {
		out.State = "closed"
	}
	if pr.merged {
		sha := pr.mergeSHA
		out.MergeCommitSHA, out.MergedBy = &sha, f.apiUser()
	}
	for _, id := range pr.labels {
		out.Labels = append(out.Labels, f.apiLabel(f.label(id)))
	}
	return out
}
