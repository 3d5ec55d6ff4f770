package server

import (
	"context"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// WithCatchUp gives the server f, which brings its source up to date with
// where its commits come from: a remote repository's fetch. A watch that
// resumes from a commit the source does not have calls it before it
// answers that the revision is gone, since on one of several replicas a
// commit that another one pushed may not have reached this one yet.
// Callers share a catch-up in flight, one begins at most once every
// catchUpInterval, and each may take catchUpTimeout; without f, a revision
// the source lacks is gone at once.
func WithCatchUp(f func(context.Context) error) Option {
	return func(c *config) { c.catchUp = f }
}

const (
	// catchUpInterval is the least time between the beginnings of two
	// catch-ups: watches naming made-up revisions do not make the server
	// fetch more often than that.
	catchUpInterval = time.Second
	// catchUpTimeout bounds one catch-up, whoever asked for it.
	catchUpTimeout = 10 * time.Second
)

// catchUps runs the catch-ups of WithCatchUp.
type catchUps struct {
	f      func(context.Context) error
	flight singleflight.Group
	mu     sync.Mutex
	last   time.Time // when the last catch-up began
}

// run brings the source up to date, or joins a catch-up in flight, and
// reports whether the source may have changed: false when there is no
// catch-up, one began less than catchUpInterval ago, or it failed.
func (s *Server) catchUp(ctx context.Context) bool {
	c := s.catchUps
	if c == nil {
		return false
	}
	v, _, _ := c.flight.Do("", func() (any, error) {
		c.mu.Lock()
		now := time.Now()
		recent := !c.last.IsZero() && now.Sub(c.last) < catchUpInterval
		if !recent {
			c.last = now
		}
		c.mu.Unlock()
		if recent {
			s.obs.catchUp("skipped")
			return false, nil
		}
		// Not the caller's context: the callers that joined share it.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), catchUpTimeout)
		defer cancel()
		start := time.Now()
		if err := c.f(ctx); err != nil {
			s.obs.catchUp("failed")
			s.cfg.logger.WarnContext(ctx, "catching up with the remote, for a watch resuming from a commit this server has not fetched, failed",
				"error", err, "duration", time.Since(start))
			return false, nil
		}
		s.obs.catchUp("fetched")
		s.cfg.logger.DebugContext(ctx, "caught up with the remote, for a watch resuming from a commit this server had not fetched",
			"duration", time.Since(start))
		return true, nil
	})
	return v.(bool)
}
