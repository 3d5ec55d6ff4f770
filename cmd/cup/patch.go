package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
)

// patchTarget is one resource a patch, label or annotate writes, with the
// options of the write.
type patchTarget struct {
	t               typeRef
	namespace, name string
	w               *writeFlags
	changeSet       string
	resourceVersion string
	key             string // the idempotency key
}

// patch sends a patch of typ to tg's resource.
func (c *cli) patch(ctx context.Context, tg *patchTarget, typ cupv1alpha1.PatchType, patch string) (*cupv1alpha1.PatchResponse, error) {
	conn, err := c.connect()
	if err != nil {
		return nil, err
	}
	res, err := conn.resources.Patch(ctx, connect.NewRequest(&cupv1alpha1.PatchRequest{
		Group: tg.t.group(), Version: tg.t.version, Plural: tg.t.plural(), Namespace: tg.namespace, Name: tg.name,
		Type: typ, Patch: patch, ResourceVersion: tg.resourceVersion,
		DryRun: tg.w.dryRun, Message: tg.w.message, ChangeSet: tg.changeSet, IdempotencyKey: tg.key,
	}))
	if err != nil {
		return nil, &resourceError{resource: tg.t.qualified() + "/" + tg.name, err: err}
	}
	return res.Msg, nil
}

// patched is what patch, label and annotate print of a write: the
// resource, what was done, and what came of it.
func patched(res *cupv1alpha1.WriteResult, tg *patchTarget, verb string) string {
	if res.GetOutcome() == cupv1alpha1.WriteOutcome_WRITE_OUTCOME_UNCHANGED {
		return fmt.Sprintf("%s/%s %s (no change)\n", tg.t.qualified(), tg.name, verb)
	}
	return fmt.Sprintf("%s/%s %s: %s\n", tg.t.qualified(), tg.name, verb, describeResult(res))
}

// patchTargetOf resolves the TYPE NAME or TYPE/NAME at the start of args
// and the write flags; it returns the arguments after the name.
func (c *cli) patchTargetOf(ctx context.Context, args []string, w *writeFlags, resourceVersion string) (*patchTarget, []string, error) {
	n := nameArgs(args)
	t, name, err := c.resourceArgs(ctx, args[:n])
	if err != nil {
		return nil, nil, err
	}
	conn, cs, err := c.writeTo(ctx, w)
	if err != nil {
		return nil, nil, err
	}
	return &patchTarget{t: t, namespace: conn.namespace, name: name, w: w, changeSet: cs, resourceVersion: resourceVersion, key: w.key(0, 1)}, args[n:], nil
}

// writeTo connects and resolves the change set the write flags name ("" for
// none).
func (c *cli) writeTo(ctx context.Context, w *writeFlags) (*connection, string, error) {
	conn, err := c.connect()
	if err != nil {
		return nil, "", err
	}
	cs, err := c.changeSet(ctx, w)
	return conn, cs, err
}

// nameArgs is how many of args name the resource: 1 for TYPE/NAME, else 2
// (TYPE NAME), at most len(args).
func nameArgs(args []string) int {
	if len(args) > 0 && strings.Contains(args[0], "/") {
		return 1
	}
	return min(2, len(args))
}

func (c *cli) newPatchCommand() *cobra.Command {
	var (
		w               writeFlags
		patch, typ      string
		resourceVersion string
	)
	cmd := &cobra.Command{
		Use:   "patch TYPE NAME | TYPE/NAME -p PATCH [--type merge|json]",
		Short: "Change fields of a resource with a JSON merge patch or a JSON patch",
		Long: `Change fields of a resource with a patch, applied by the server to the
resource's JSON form ({"apiVersion", "kind", "metadata", "spec"}) and written
as any write is: checked against the type's schema, as one commit (or a
proposal). apiVersion, kind, metadata.namespace and metadata.name cannot
change.

--type merge (the default) is a JSON merge patch (RFC 7396): an object
holding the fields to set, null removing one. --type json is a JSON patch
(RFC 6902): an array of add, remove, replace, move, copy and test
operations; a test that fails writes nothing. kubectl's default, a strategic
merge patch, needs Kubernetes' Go types and is not served: a merge patch
does the same except for lists, which it replaces whole.

-p @FILE reads the patch from a file, -p @- from stdin.

A metadata.resourceVersion in the patch, or --resource-version, makes the
write happen only if the resource still has that version.

Prints plural.group/name patched: committed <commit> (or proposed <url>,
dry run: N files), or patched (no change).`,
		Example: `  cup patch flag dark-mode -p '{"spec":{"enabled":true}}'
  cup patch flags/dark-mode --type json -p '[{"op":"replace","path":"/spec/rollout","value":50}]'
  cup patch flag dark-mode -p @patch.json --dry-run`,
		ValidArgsFunction: c.completeTypes,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			var pt cupv1alpha1.PatchType
			switch typ {
			case "merge":
				pt = cupv1alpha1.PatchType_PATCH_TYPE_MERGE
			case "json":
				pt = cupv1alpha1.PatchType_PATCH_TYPE_JSON
			case "strategic":
				return errors.New("--type strategic (kubectl's default) is not served: cup's resources have no Kubernetes Go types to merge by; use --type merge (the default here), which replaces lists whole, or --type json")
			default:
				return fmt.Errorf("--type %q: want merge or json", typ)
			}
			if patch == "" {
				return errors.New("-p is required: the patch, as JSON (or @FILE)")
			}
			text, err := c.patchText(patch)
			if err != nil {
				return err
			}
			tg, rest, err := c.patchTargetOf(ctx, args, &w, resourceVersion)
			if err != nil {
				return err
			}
			if len(rest) > 0 {
				return fmt.Errorf("unexpected arguments %q: patch one resource, TYPE NAME or TYPE/NAME", rest)
			}
			res, err := c.patch(ctx, tg, pt, text)
			if err != nil {
				return err
			}
			_, err = fmt.Fprint(c.stdout, patched(res.GetResult(), tg, "patched"))
			return err
		},
	}
	cmd.Flags().StringVarP(&patch, "patch", "p", "", "the patch as JSON, or @FILE to read it from a file (@- for stdin)")
	cmd.Flags().StringVar(&typ, "type", "merge", "merge (JSON merge patch, RFC 7396) or json (JSON patch, RFC 6902); kubectl's strategic is not served")
	cmd.Flags().StringVar(&resourceVersion, "resource-version", "", "write only if the resource has this resourceVersion")
	_ = cmd.RegisterFlagCompletionFunc("type", cobra.FixedCompletions([]string{"merge", "json"}, cobra.ShellCompDirectiveNoFileComp))
	w.add(cmd.Flags())
	return cmd
}

// patchText is the patch -p gives: the text itself, or a file's content
// for @FILE (@- for stdin).
func (c *cli) patchText(p string) (string, error) {
	file, ok := strings.CutPrefix(p, "@")
	if !ok {
		return p, nil
	}
	var b []byte
	var err error
	if file == "-" {
		b, err = io.ReadAll(c.stdin)
	} else {
		b, err = os.ReadFile(file)
	}
	if err != nil {
		return "", fmt.Errorf("-p %s: %w", p, err)
	}
	return string(b), nil
}

// metadataEdit is what cup label or cup annotate changes: set maps keys
// to values, remove lists keys to remove.
type metadataEdit struct {
	set    map[string]string
	remove []string
}

// parseMetadataEdit reads the KEY=VALUE and KEY- arguments of label
// (labels true) or annotate, refusing keys and values that are not valid.
func parseMetadataEdit(args []string, labels bool) (*metadataEdit, error) {
	what := "annotation"
	if labels {
		what = "label"
	}
	if len(args) == 0 {
		return nil, fmt.Errorf("give at least one %s: KEY=VALUE sets it, KEY- removes it", what)
	}
	e := &metadataEdit{set: map[string]string{}}
	for _, a := range args {
		key, value, set := strings.Cut(a, "=")
		if !set {
			var ok bool
			if key, ok = strings.CutSuffix(a, "-"); !ok {
				return nil, fmt.Errorf("%q is neither KEY=VALUE nor KEY-", a)
			}
		}
		if errs := validation.IsQualifiedName(key); len(errs) > 0 {
			return nil, fmt.Errorf("%q is not a valid %s key: %s", key, what, strings.Join(errs, "; "))
		}
		if _, dup := e.set[key]; dup || slices.Contains(e.remove, key) {
			return nil, fmt.Errorf("%s %q is given more than once", what, key)
		}
		if !set {
			e.remove = append(e.remove, key)
			continue
		}
		switch {
		case labels:
			if errs := validation.IsValidLabelValue(value); len(errs) > 0 {
				return nil, fmt.Errorf("%q is not a valid label value for %q: %s", value, key, strings.Join(errs, "; "))
			}
		case len(value) > 65536:
			return nil, fmt.Errorf("the annotation %q has a value of %d bytes, more than 65536", key, len(value))
		}
		e.set[key] = value
	}
	return e, nil
}

// patchFor is the merge patch that makes e of current (the labels or
// annotations the resource has now), refusing to change a value without
// overwrite as kubectl does.
func (e *metadataEdit) patchFor(field string, current map[string]string, overwrite bool) (string, error) {
	m := map[string]any{}
	for k, v := range e.set {
		if old, ok := current[k]; ok && old != v && !overwrite {
			return "", fmt.Errorf("'%s' already has a value (%s), and --overwrite is false", k, old)
		}
		m[k] = v
	}
	for _, k := range e.remove {
		m[k] = nil // removing a key that is not there changes nothing
	}
	b, err := json.Marshal(map[string]any{"metadata": map[string]any{field: m}})
	return string(b), err
}

// maxMetadataAttempts is how often label and annotate read the resource
// again when someone changed it between their read and their write.
const maxMetadataAttempts = 3

func (c *cli) newMetadataCommand(labels bool) *cobra.Command {
	var (
		w               writeFlags
		overwrite, all  bool
		resourceVersion string
		selector        string
	)
	verb, noun, field, past := "annotate", "annotation", "annotations", "annotated"
	if labels {
		verb, noun, field, past = "label", "label", "labels", "labeled"
	}
	cmd := &cobra.Command{
		Use:   verb + " (TYPE NAME | TYPE/NAME | TYPE -l SELECTOR | TYPE --all) KEY=VALUE... KEY-...",
		Short: "Set or remove the " + field + " of resources",
		Long: `Set (KEY=VALUE) or remove (KEY-) ` + field + ` of a resource, or of every
resource of a type in the namespace that -l selects (or --all), as kubectl
` + verb + ` does: changing the value of a ` + noun + ` a resource has fails unless
--overwrite is given; removing one it does not have is no error.

Each resource is read, and the change written as a merge patch on the
condition that the resource is still as read; when someone changed it in
between, it is read again and the change checked again (up to 3 times).
With --resource-version, the write happens only if the resource has that
version, and is not tried again. With --idempotency-key (and no
--resource-version), the write is not conditional on the version read, so
that running the command again after it succeeded replays it. With several
resources, each is its own write, in name order, and the first failure
stops the rest; an --idempotency-key KEY gives each KEY-<n>.

Prints a line per resource: plural.group/name ` + past + `: committed <commit>
(or proposed <url>, dry run: N files), or ` + past + ` (no change).`,
		Example: fmt.Sprintf(`  cup %[1]s flag dark-mode owner=web
  cup %[1]s flags/dark-mode owner=search --overwrite
  cup %[1]s flag dark-mode owner-
  cup %[1]s flags -l team=web reviewed=yes`, verb),
		ValidArgsFunction: c.completeTypes,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			many := selector != "" || all
			switch {
			case selector != "" && all:
				return errors.New("-l and --all both choose the resources: give one")
			case many && resourceVersion != "":
				return errors.New("--resource-version names the version of one resource: not with -l or --all")
			case many && len(args) > 0 && strings.Contains(args[0], "/"):
				return fmt.Errorf("-l and --all take a TYPE, not %s", args[0])
			}
			n := nameArgs(args)
			if many {
				n = min(1, len(args))
			}
			edit, err := parseMetadataEdit(args[n:], labels)
			if err != nil {
				return err
			}
			if !many {
				tg, _, err := c.patchTargetOf(ctx, args[:n], &w, resourceVersion)
				if err != nil {
					return err
				}
				return c.editMetadata(ctx, tg, nil, edit, field, past, overwrite)
			}
			if n == 0 {
				return errors.New("name the TYPE of the resources to " + verb)
			}
			tgs, read, err := c.selectTargets(ctx, args[0], selector, &w)
			if err != nil {
				return err
			}
			if len(tgs) == 0 {
				_, err := fmt.Fprintln(c.stderr, noResources(c.conn.namespace))
				return err
			}
			for i, tg := range tgs {
				if err := c.editMetadata(ctx, tg, read[i], edit, field, past, overwrite); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&overwrite, "overwrite", false, "change the values of "+field+" the resource has")
	cmd.Flags().StringVar(&resourceVersion, "resource-version", "", "write only if the resource has this resourceVersion")
	cmd.Flags().StringVarP(&selector, "selector", "l", "", "the resources of TYPE in the namespace that this label selector selects, e.g. team=web")
	cmd.Flags().BoolVar(&all, "all", false, "every resource of TYPE in the namespace")
	w.add(cmd.Flags())
	return cmd
}

// selectTargets lists the resources of typ in the namespace that selector
// selects (all of them when it is empty), at the change set of w.
func (c *cli) selectTargets(ctx context.Context, typ, selector string, w *writeFlags) ([]*patchTarget, []*cupv1alpha1.Resource, error) {
	t, err := c.resolveType(ctx, typ)
	if err != nil {
		return nil, nil, err
	}
	conn, cs, err := c.writeTo(ctx, w)
	if err != nil {
		return nil, nil, err
	}
	req := &cupv1alpha1.ListRequest{
		Group: t.group(), Version: t.version, Plural: t.plural(), Namespace: conn.namespace,
		Revision: cs, LabelSelector: selector,
	}
	var read []*cupv1alpha1.Resource
	if err := eachPage(ctx, conn, req, func(res *cupv1alpha1.ListResponse) { read = append(read, res.GetItems()...) }); err != nil {
		return nil, nil, err
	}
	tgs := make([]*patchTarget, len(read))
	for i, r := range read {
		tgs[i] = &patchTarget{t: t, namespace: conn.namespace, name: r.GetMetadata().GetName(), w: w, changeSet: cs, key: w.key(i, len(read))}
	}
	return tgs, read, nil
}

// editMetadata makes edit of the labels or annotations (field) of tg's
// resource, as read (r, or read now when nil), and prints what came of it.
// When the resource changed since it was read, and no resourceVersion was
// asked for, it reads it again and tries again.
func (c *cli) editMetadata(ctx context.Context, tg *patchTarget, r *cupv1alpha1.Resource, edit *metadataEdit, field, past string, overwrite bool) error {
	for attempt := 1; ; attempt++ {
		if r == nil {
			var err error
			if r, err = c.getResource(ctx, tg.t, tg.namespace, tg.name, tg.changeSet); err != nil {
				return err
			}
		}
		current := r.GetMetadata().GetAnnotations()
		if field == "labels" {
			current = r.GetMetadata().GetLabels()
		}
		patch, err := edit.patchFor(field, current, overwrite)
		if err != nil {
			return &resourceError{resource: tg.t.qualified() + "/" + tg.name, err: err}
		}
		read := *tg
		// With an idempotency key, the request must not depend on what was
		// read, or a rerun after the first write succeeded (which reads the
		// resource it made) would be another request with the same key,
		// refused: it goes without the version read, as kubectl's does.
		if read.resourceVersion == "" && read.key == "" {
			read.resourceVersion = r.GetMetadata().GetResourceVersion()
		}
		res, err := c.patch(ctx, &read, cupv1alpha1.PatchType_PATCH_TYPE_MERGE, patch)
		if connect.CodeOf(err) == connect.CodeAborted && tg.resourceVersion == "" && attempt < maxMetadataAttempts {
			r = nil
			continue
		}
		if err != nil {
			return err
		}
		_, err = fmt.Fprint(c.stdout, patched(res.GetResult(), tg, past))
		return err
	}
}
