package server

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/source"
)

// A Get agrees with a List of the same tree (controller.Controller), so a
// namespace's listing that the memo holds answers the Gets of its names
// without a controller call (listedEntry).
//
// Some controllers read the whole namespace for each Get: a WASM module
// that keeps a namespace in one file parses the file for every call
// (controller.GetCostsList). For those, the first Get of a namespace at a
// commit is answered by the controller as before, and starts a listing of
// the namespace in the background (prefetchListing); the Gets that follow
// are answered from it. Only a caller's reads start one (readEntry), not
// the read of the current resource on the way to a write, whose commit the
// write replaces. Without the listing, every Get of a new name would
// cost a read of the whole file: 70 ms for a file of 10,000 entries.

// Bounds of the listings read in the background.
const (
	// maxPrefetches is how many run at once, each on its own type and
	// namespace.
	maxPrefetches = 2
	// prefetchRetry is how long the server waits before listing a type
	// and namespace in the background again after a listing failed;
	// prefetchRetryUnkept after one too large for the memo to keep
	// (cupd --cache-bytes), which is likely to stay so.
	prefetchRetry       = time.Minute
	prefetchRetryUnkept = 10 * time.Minute
	// maxPrefetchRetries bounds the type and namespace pairs waiting out
	// prefetchRetry: past it, the oldest waits are forgotten.
	maxPrefetchRetries = 1024
)

// Outcomes of a listing in the background, the outcome label of
// cup_server_listing_prefetches_total.
const (
	prefetchListed   = "listed"   // the memo holds the listing
	prefetchUnkept   = "unkept"   // listed, but too large for the memo
	prefetchFailed   = "failed"   // the listing failed
	prefetchSkipped  = "skipped"  // not begun: every controller call slot, or every prefetch, was taken
	prefetchCanceled = "canceled" // the server shut down
)

type prefetchKey struct {
	typ       *Type
	namespace string
}

// prefetcher runs the listings read in the background.
type prefetcher struct {
	ctx    context.Context // ended by stop
	cancel context.CancelFunc

	mu      sync.Mutex
	running map[prefetchKey]bool
	retry   map[prefetchKey]time.Time // when a pair may be listed again

	outcomes     *prometheus.CounterVec // outcome
	fromListings prometheus.Counter
}

func newPrefetcher() *prefetcher {
	ctx, cancel := context.WithCancel(context.Background())
	return &prefetcher{
		ctx: ctx, cancel: cancel,
		running: make(map[prefetchKey]bool), retry: make(map[prefetchKey]time.Time),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cup_server_listing_prefetches_total",
			Help: "Namespaces listed in the background after a Get of a controller whose Get costs a List, by outcome (listed, unkept, failed, canceled, skipped).",
		}, []string{"outcome"}),
		fromListings: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cup_server_gets_from_listings_total",
			Help: "Gets answered from a listing of their namespace that the memo held, without a controller call.",
		}),
	}
}

// stop cancels the listings under way, and keeps new ones from starting.
func (p *prefetcher) stop() { p.cancel() }

// listedEntry answers a Get of name from the memo's listing of its
// namespace at snap: e is the entry, or nil when the listing holds no such
// name. ok is false when the memo holds no listing, or when the name is
// not in it but the listing left files out, one of which a Get may read.
func (s *Server) listedEntry(t *Type, snap *source.Snapshot, namespace, name string) (e *entry, ok bool) {
	v, ok := s.memo.lookup(memoKey{commit: snap.Commit, typ: t, namespace: namespace})
	if !ok {
		return nil, false
	}
	l := v.(*listing)
	i, found := slices.BinarySearchFunc(l.items, name, func(e *entry, name string) int { return strings.Compare(e.name, name) })
	switch {
	case found:
		e = l.items[i]
	case len(l.problems) > 0:
		return nil, false
	}
	s.memo.stats.hit()
	s.prefetch.fromListings.Inc()
	return e, true
}

// prefetchListing lists namespace at snap in the background when t's
// controller says a Get costs a List, unless the memo holds the listing,
// one of the type and namespace is under way (of this commit or another),
// or one failed less than prefetchRetry ago (or was too large to keep less
// than prefetchRetryUnkept ago). ctx is the Get's, which the
// listing's span links to.
func (s *Server) prefetchListing(ctx context.Context, t *Type, snap *source.Snapshot, namespace string) {
	if gc, ok := t.Controller.(controller.GetCostsList); !ok || !gc.GetCostsList() {
		return
	}
	mk := memoKey{commit: snap.Commit, typ: t, namespace: namespace}
	if _, ok := s.memo.lookup(mk); ok {
		return
	}
	p := s.prefetch
	k := prefetchKey{typ: t, namespace: namespace}
	now := time.Now()
	p.mu.Lock()
	if p.running[k] || now.Before(p.retry[k]) || p.ctx.Err() != nil {
		p.mu.Unlock()
		return
	}
	if len(p.running) >= maxPrefetches || !s.calls.free() {
		p.mu.Unlock()
		p.outcomes.WithLabelValues(prefetchSkipped).Inc()
		return
	}
	k.namespace = strings.Clone(namespace) // not the request's string
	mk.namespace, mk.commit = k.namespace, strings.Clone(snap.Commit)
	p.running[k] = true
	p.mu.Unlock()
	link := trace.LinkFromContext(ctx)
	go func() {
		outcome := s.runPrefetch(link, t, snap, mk)
		p.mu.Lock()
		defer p.mu.Unlock()
		delete(p.running, k)
		p.outcomes.WithLabelValues(outcome).Inc()
		if outcome == prefetchListed || outcome == prefetchCanceled {
			return
		}
		if len(p.retry) >= maxPrefetchRetries {
			for rk, at := range p.retry {
				if time.Now().After(at) || len(p.retry) >= maxPrefetchRetries {
					delete(p.retry, rk)
				}
			}
		}
		wait := prefetchRetry
		if outcome == prefetchUnkept {
			wait = prefetchRetryUnkept
		}
		p.retry[k] = time.Now().Add(wait)
	}()
}

// runPrefetch lists the namespace of mk at snap, as a Get's background
// work bounded by the request timeout, and returns the outcome.
func (s *Server) runPrefetch(link trace.Link, t *Type, snap *source.Snapshot, mk memoKey) string {
	ctx, cancel := context.WithTimeout(s.prefetch.ctx, s.cfg.requestTimeout)
	defer cancel()
	var span trace.Span = noop.Span{}
	if tr := s.obs.tracer; tr != nil {
		ctx, span = tr.Start(ctx, "server.prefetch_listing", trace.WithLinks(link), trace.WithAttributes(
			attribute.String("cup.type", t.Plural+"."+t.Group), attribute.String("cup.namespace", mk.namespace),
			attribute.String("cup.commit", mk.commit)))
	}
	defer span.End()
	start := time.Now()
	l, err := s.listEntries(ctx, t, snap, mk.namespace)
	log := s.cfg.logger
	attrs := []any{"type", t.Plural + "." + t.Group, "namespace", mk.namespace, "commit", mk.commit, "duration", time.Since(start)}
	switch {
	case err != nil && s.prefetch.ctx.Err() != nil:
		log.DebugContext(ctx, "a listing in the background ended: the server is shutting down", attrs...)
		return prefetchCanceled
	case err != nil:
		span.SetStatus(codes.Error, err.Error())
		log.WarnContext(ctx, "listing a namespace in the background, to answer its gets, failed: each get reads the namespace until it is tried again, in a minute",
			append(attrs, "error", err)...)
		return prefetchFailed
	}
	span.SetAttributes(attribute.Int("cup.resources", len(l.items)))
	if _, ok := s.memo.lookup(mk); !ok {
		log.InfoContext(ctx, "a namespace listed in the background, to answer its gets, is too large for the memo (cupd --cache-bytes): each get reads the namespace, and it is tried again in ten minutes",
			append(attrs, "resources", len(l.items))...)
		return prefetchUnkept
	}
	log.DebugContext(ctx, "listed a namespace in the background, to answer its gets", append(attrs, "resources", len(l.items))...)
	return prefetchListed
}
