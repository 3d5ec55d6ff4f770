package proposals

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/template"

	"github.com/cup-dev/cup/source"
)

// Templates render commit messages and proposals. Each is a text/template
// executed with a TemplateData.
type Templates struct {
	// Commit renders the commit message. The default keeps the message the
	// request carries (.Message).
	Commit *template.Template
	// Title renders the proposal's title. The default is the commit
	// message's first line.
	Title *template.Template
	// Body renders the proposal's description. The default lists each
	// changed resource and who asked for the change.
	Body *template.Template
}

// TemplateData is what the templates see.
type TemplateData struct {
	// Message is the commit message the request carries (the API's
	// default names the resource and the operation).
	Message string
	// Subject is Message's first line.
	Subject string
	// Resources are the resources the proposal changes (for Commit: the
	// ones this write changes). In Body, those that fit: a description
	// holds at most maxBody bytes (GitHub's limit is 65,536 characters),
	// so a large batch's lists as many as fit, and More counts the rest.
	Resources []source.ResourceRef
	// More counts the resources Body's Resources leave out.
	More int
	// Requester is who asked for the change; empty when unknown.
	Requester string
	// Branch is the change set's branch, Base the branch it proposes to
	// change.
	Branch, Base string
}

const (
	defaultCommit = `{{.Message}}`
	defaultTitle  = `{{.Subject}}`
	defaultBody   = `This change was proposed through cup{{with .Requester}} by {{.}}{{end}}.

| type | namespace | name |
|---|---|---|
{{range .Resources}}| {{.Kind}} ({{.Group}}/{{.Version}}) | {{.Namespace}} | {{.Name}} |
{{end}}{{with .More}}| and {{.}} more | | |
{{end}}
Branch ` + "`{{.Branch}}`" + ` into ` + "`{{.Base}}`" + `.
`
)

// Template file names LoadTemplates reads.
const (
	CommitFile = "commit.tmpl"
	TitleFile  = "title.tmpl"
	BodyFile   = "body.tmpl"
)

// DefaultTemplates returns the built-in templates.
func DefaultTemplates() *Templates {
	return &Templates{
		Commit: template.Must(template.New(CommitFile).Parse(defaultCommit)),
		Title:  template.Must(template.New(TitleFile).Parse(defaultTitle)),
		Body:   template.Must(template.New(BodyFile).Parse(defaultBody)),
	}
}

// LoadTemplates reads commit.tmpl, title.tmpl and body.tmpl from dir,
// keeping the default for each file that is missing. A template that does
// not parse, or that fails on sample data, is an error naming its file.
func LoadTemplates(dir string) (*Templates, error) {
	t := DefaultTemplates()
	for _, f := range []struct {
		name string
		dst  **template.Template
	}{{CommitFile, &t.Commit}, {TitleFile, &t.Title}, {BodyFile, &t.Body}} {
		path := filepath.Join(dir, f.name)
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("templates: %w", err)
		}
		tmpl, err := template.New(f.name).Option("missingkey=error").Parse(string(b))
		if err != nil {
			return nil, fmt.Errorf("templates: %s: %w", path, err)
		}
		if _, err := render(tmpl, sampleData); err != nil {
			return nil, fmt.Errorf("templates: %s: %w", path, err)
		}
		*f.dst = tmpl
	}
	return t, nil
}

var sampleData = &TemplateData{
	Message: "Update Flag default/new-checkout\n", Subject: "Update Flag default/new-checkout",
	Resources: []source.ResourceRef{{Group: "flags.cup.dev", Version: "v1alpha1", Kind: "Flag", Plural: "flags", Namespace: "default", Name: "new-checkout"}},
	Requester: "alice", Branch: "cup/0123456789", Base: "main",
}

func render(t *template.Template, d *TemplateData) (string, error) {
	var b bytes.Buffer
	if err := t.Execute(&b, d); err != nil {
		return "", err
	}
	return b.String(), nil
}

// resourcesMarker opens the block of a proposal's description that lists
// its resources for cup to read back: an HTML comment, which the hosts
// do not show.
const resourcesMarker = "<!-- cup:resources "

// maxBody bounds a description: GitHub refuses one of more than 65,536
// characters, after the branch is pushed, and GitLab's and Gitea's limits
// are higher.
const maxBody = 60_000

// description renders the Body template of data for the resources rs,
// more of which were left out before, with the machine-readable list
// appended: all of rs when that fits in maxBody, else as many as fit, with
// data.More counting the rest (a binary search: log(len(rs)) renders).
func description(t *template.Template, data *TemplateData, rs []source.ResourceRef, more int) (string, error) {
	try := func(n int) (string, error) {
		d := *data
		d.Resources, d.More = rs[:n], more+len(rs)-n
		body, err := render(t, &d)
		if err != nil {
			return "", err
		}
		return withResources(body, rs[:n], d.More), nil
	}
	body, err := try(len(rs))
	if err != nil || len(body) <= maxBody {
		return body, err
	}
	lo, hi := 0, len(rs) // the most that fit is in [lo, hi)
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		b, err := try(mid)
		if err != nil {
			return "", err
		}
		if len(b) <= maxBody {
			lo = mid
		} else {
			hi = mid
		}
	}
	return try(lo)
}

// moreMarker follows the list of resources when it leaves some out.
const moreMarker = "<!-- cup:resources-more "

// withResources appends the machine-readable list of resources to body,
// and the count of those it leaves out.
func withResources(body string, rs []source.ResourceRef, more int) string {
	b, _ := json.Marshal(refsJSON(rs))
	out := strings.TrimRight(body, "\n") + "\n\n" + resourcesMarker + string(b) + " -->\n"
	if more > 0 {
		out += moreMarker + strconv.Itoa(more) + " -->\n"
	}
	return out
}

// resourcesOf reads back the list withResources appended, and the count
// of resources it leaves out.
func resourcesOf(body string) ([]source.ResourceRef, int) {
	more := 0
	if i := strings.LastIndex(body, moreMarker); i >= 0 {
		n, _, _ := strings.Cut(body[i+len(moreMarker):], " -->")
		more, _ = strconv.Atoi(n)
	}
	i := strings.LastIndex(body, resourcesMarker)
	if i < 0 {
		return nil, more
	}
	rest := body[i+len(resourcesMarker):]
	j := strings.Index(rest, " -->")
	if j < 0 {
		return nil, more
	}
	var rs []refJSON
	if json.Unmarshal([]byte(rest[:j]), &rs) != nil {
		return nil, more
	}
	out := make([]source.ResourceRef, len(rs))
	for i, r := range rs {
		out[i] = source.ResourceRef(r)
	}
	return out, more
}

// refJSON is source.ResourceRef with JSON names.
type refJSON struct {
	Group     string `json:"group"`
	Version   string `json:"version"`
	Kind      string `json:"kind"`
	Plural    string `json:"plural"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

func refsJSON(rs []source.ResourceRef) []refJSON {
	out := make([]refJSON, len(rs))
	for i, r := range rs {
		out[i] = refJSON(r)
	}
	return out
}

// mergeRefs adds the refs of add missing from rs.
func mergeRefs(rs, add []source.ResourceRef) []source.ResourceRef {
	out := append([]source.ResourceRef(nil), rs...)
	// A set, not a scan per ref: a batch may name 10,000 resources.
	seen := make(map[source.ResourceRef]bool, len(rs)+len(add))
	for _, r := range rs {
		seen[r] = true
	}
	for _, r := range add {
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}
