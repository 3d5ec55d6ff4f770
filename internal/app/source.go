// Opening the source over the repository, local or remote, in the configured
// write mode.

package app

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cup-dev/cup/internal/registry"
	"github.com/cup-dev/cup/internal/signing"
	"github.com/cup-dev/cup/internal/writes"
	"github.com/cup-dev/cup/source"
	gitsource "github.com/cup-dev/cup/source/git"
	"github.com/cup-dev/cup/source/local"
)

// repoSource is what App needs of a source beyond source.Source.
type repoSource interface {
	source.Source
	DefaultBranch() (string, error)
	Close() error
}

// openSource opens the local or remote source opts name; a remote one
// exports its fetch and push metrics to reg.
func (a *App) openSource(ctx context.Context, opts Options, mode source.WriteMode, reg prometheus.Registerer) (repoSource, error) {
	prefix := or(opts.BranchPrefix, source.DefaultBranchPrefix)
	groupMax := opts.WriteGroupMax
	if groupMax == 0 {
		groupMax = writes.DefaultGroupMax
	}
	var signer source.Signer
	if opts.SigningKeyFile != "" {
		key, err := os.ReadFile(opts.SigningKeyFile)
		if err != nil {
			return nil, fmt.Errorf("--signing-key-file: %w", err)
		}
		s, err := signing.NewOpenPGP(key, []byte(opts.SigningKeyPassphrase))
		if err != nil {
			return nil, fmt.Errorf("--signing-key-file %s: %w", opts.SigningKeyFile, err)
		}
		opts.Logger.Info("signing commits", "key", s.Fingerprint())
		signer = s
	}
	if !gitsource.IsURL(a.repo) {
		lopts := []local.Option{local.WithLogger(opts.Logger), local.WithWriteMode(mode), local.WithBranchPrefix(prefix), local.WithSigner(signer),
			local.WithWriteGroup(groupMax, opts.WriteGroupWait), local.WithMetrics(reg)}
		if opts.Branch != "" {
			lopts = append(lopts, local.WithBranch(opts.Branch))
		}
		if opts.AuthorName != "" || opts.AuthorEmail != "" {
			lopts = append(lopts, local.WithAuthor(or(opts.AuthorName, "cup"), or(opts.AuthorEmail, "cup@localhost")))
		}
		return local.Open(a.repo, lopts...)
	}
	r := opts.Remote
	gopts := []gitsource.Option{
		gitsource.WithLogger(opts.Logger),
		gitsource.WithWriteMode(mode),
		gitsource.WithBranchPrefix(prefix),
		gitsource.WithCacheDir(r.CacheDir),
		gitsource.WithFetchInterval(r.FetchInterval),
		gitsource.WithStrict(r.Strict),
		gitsource.WithSigner(signer),
		gitsource.WithMetrics(reg),
		gitsource.WithWriteGroup(groupMax, opts.WriteGroupWait),
	}
	if opts.Branch != "" {
		gopts = append(gopts, gitsource.WithBranch(opts.Branch))
	}
	if opts.AuthorName != "" || opts.AuthorEmail != "" {
		gopts = append(gopts, gitsource.WithAuthor(or(opts.AuthorName, "cup"), or(opts.AuthorEmail, "cup@localhost")))
	}
	switch {
	case r.SSHKey != "":
		auth, err := gitsource.SSHKeyAuth(r.User, r.SSHKey, r.SSHKeyPassphrase, r.KnownHosts...)
		if err != nil {
			return nil, err
		}
		gopts = append(gopts, gitsource.WithAuth(auth))
	case r.Token != "":
		gopts = append(gopts, gitsource.WithAuth(gitsource.TokenAuth(r.User, r.Token)))
	}
	src, err := gitsource.Open(a.repo, gopts...)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if err := src.Start(ctx); err != nil {
		_ = src.Close()
		return nil, err
	}
	opts.Logger.Info("repository ready", "url", gitsource.Redact(a.repo), "took", time.Since(start).Round(time.Millisecond))
	a.remote = src
	return src, nil
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// writeMode works out the source's write mode and whether writes are
// proposed: "proposal" (the default with an SCM) is a branch write plus a
// proposal.
func writeMode(opts Options) (source.WriteMode, bool, error) {
	switch m := opts.WriteMode; {
	case m == "proposal" || m == "" && opts.SCM.Provider != "":
		if opts.SCM.Provider == "" {
			return 0, false, fmt.Errorf("--write-mode=proposal needs --scm (%s)", registry.SCMs.List("or"))
		}
		return source.ModeBranch, true, nil
	case m == "":
		return source.ModeDirect, false, nil
	default:
		mode, err := source.ParseWriteMode(m)
		if err != nil {
			return 0, false, fmt.Errorf("--write-mode: %w (or proposal)", err)
		}
		return mode, false, nil
	}
}
