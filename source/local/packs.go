package local

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	gitconfig "github.com/go-git/go-git/v5/plumbing/format/config"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/cup-dev/cup/internal/gitfs"
	"github.com/cup-dev/cup/internal/promreg"
)

// tracerName names the tracer the source's spans come from.
const tracerName = "github.com/cup-dev/cup/source/local"

// A packer writes the objects of a group of commits (see gitfs.Staging)
// before the branch moves to them, and keeps the packs it writes few: after
// each it merges, in a goroutine of its own, the smallest of them whose
// sizes break a progression of ratio 2, as git repack --geometric=2 does.
// n groups then leave O(log n) packs, and a merge copies each byte O(log n)
// times in all. It merges the packs it writes and the small ones it finds
// at start (see adoptable), including those earlier runs left.
type packer struct {
	objects string // the objects directory
	dir     string // objects/pack
	staging *gitfs.Staging
	objs    *gitfs.ObjectDir
	log     *slog.Logger
	metrics *packMetrics
	tracer  trace.Tracer

	// looseLimit is the repository's gc.auto: loose objects are packed
	// once there are more than it (none when 0).
	looseLimit int
	ctx        context.Context // done when the packer closes
	cancel     context.CancelFunc

	mu      sync.Mutex
	packs   []ownPack // written by this process or adopted, and not merged away
	merging bool      // the merging goroutine runs
	loose   int       // loose objects: estimated at start, then those written since the last run
	packing bool      // the goroutine packing loose objects runs
	closed  bool
	wg      sync.WaitGroup
}

// An ownPack is a pack the packer wrote or merged.
type ownPack struct {
	name string // path without .pack or .idx
	size int64
}

func newPacker(objectsDir string, objs *gitfs.ObjectDir, looseLimit int, cfg *config) (*packer, error) {
	m, err := newPackMetrics(cfg.Metrics)
	if err != nil {
		return nil, err
	}
	p := &packer{
		objects:    objectsDir,
		dir:        filepath.Join(objectsDir, "pack"),
		objs:       objs,
		log:        cfg.Logger,
		metrics:    m,
		tracer:     otel.GetTracerProvider().Tracer(tracerName),
		looseLimit: looseLimit,
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.staging = gitfs.NewStaging(objectsDir, objs, gitfs.StagingOnFlush(p.flushed))
	p.packs = adoptable(p.dir)
	p.metrics.count(len(p.packs))
	loose := gitfs.EstimateLoose(objectsDir)
	if p.looseLimit > 0 && loose > p.looseLimit {
		// Packed before the first read, which would otherwise read them
		// loose while they are packed beside it: a first list of 10,000
		// took 260 ms so, and 90 ms after. A failure leaves them loose
		// until gc.auto more, as a failure in the background does.
		more, err := p.packLooseBatch(openBatch, openBatchBytes)
		loose = 0
		if err == nil && more {
			loose = p.looseLimit + 1 // the rest at once, in the background
		}
	}
	p.mu.Lock()
	p.addLoose(loose) // the rest, if any, in the background
	p.mu.Unlock()
	return p, nil
}

// defaultLooseLimit is git's default gc.auto: git gc --auto packs loose
// objects once there are more than about this many.
const defaultLooseLimit = 6700

// looseLimit returns the gc.auto that the repository's config file (its
// content, nil when it has none) sets, as git gc --auto would read it but
// for the user's and the system's configuration, or git's default; 0 or
// less turns packing off, as it turns off git gc --auto.
func looseLimit(gitConfig []byte) int {
	cfg := gitconfig.New()
	if err := gitconfig.NewDecoder(bytes.NewReader(gitConfig)).Decode(cfg); err != nil {
		return defaultLooseLimit
	}
	v := cfg.Section("gc").Option("auto")
	if v == "" {
		return defaultLooseLimit
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return defaultLooseLimit
	}
	return max(n, 0)
}

// adoptMaxBytes is the size of the largest pack found at start that a
// packer merges with its own.
const adoptMaxBytes = 64 << 20

// adoptable returns the packs of packDir, found at start, that a packer may
// merge with those it writes, as git repack --geometric does with all
// packs: those of earlier runs (each leaves about log2 of its groups) and
// small ones of git's, so that packs do not pile up over restarts. It
// leaves alone a pack over adoptMaxBytes, one git is told to keep (.keep,
// .promisor), a cruft pack (.mtimes: git gc's record of when its
// unreachable objects were last used) and one with a bitmap; and every
// pack of a repository with a multi-pack-index, which would name packs
// gone.
func adoptable(packDir string) []ownPack {
	if _, err := os.Stat(filepath.Join(packDir, "multi-pack-index")); err == nil {
		return nil
	}
	names, _ := filepath.Glob(filepath.Join(packDir, "pack-*.idx"))
	var packs []ownPack
	for _, idx := range names {
		name := strings.TrimSuffix(idx, ".idx")
		fi, err := os.Stat(name + ".pack")
		if err != nil || fi.Size() > adoptMaxBytes {
			continue
		}
		keep := false
		for _, ext := range []string{".keep", ".promisor", ".mtimes", ".bitmap"} {
			if _, err := os.Stat(name + ext); err == nil {
				keep = true
			}
		}
		if !keep {
			packs = append(packs, ownPack{name: name, size: fi.Size()})
		}
	}
	return packs
}

// flush writes the objects staged so far as one pack or as loose objects
// (see gitfs.Staging.Flush).
func (p *packer) flush(ctx context.Context) error {
	_, span := p.tracer.Start(ctx, "local.write_objects")
	defer span.End()
	start := time.Now()
	res, err := p.staging.Flush()
	if res.Objects > 0 {
		p.metrics.flushTime(time.Since(start))
	}
	span.SetAttributes(attribute.Int("cup.git.objects", res.Objects), attribute.Int64("cup.git.pack_bytes", res.PackBytes))
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	return err
}

// flushed counts what a flush wrote, and the pack it wrote: a flush
// before a branch moves, or one a write made when the objects kept grew
// large.
func (p *packer) flushed(res gitfs.FlushResult) {
	as := "loose"
	if res.Pack != "" {
		as = "pack"
		p.add(ownPack{name: res.Pack, size: res.PackBytes})
	} else {
		p.mu.Lock()
		p.addLoose(res.Objects)
		p.mu.Unlock()
	}
	p.metrics.written(as, res.Objects)
}

// addLoose counts n more loose objects, and starts packing them when
// there are more than p.looseLimit, as git gc --auto would. p.mu is held.
func (p *packer) addLoose(n int) {
	p.loose += n
	if p.closed || p.packing || p.looseLimit <= 0 || p.loose <= p.looseLimit {
		return
	}
	p.packing = true
	p.wg.Add(1)
	go p.packLoose()
}

// packLoose moves the loose objects into packs, a batch at a time (see
// gitfs.PackLoose), and adds each pack to those it merges.
func (p *packer) packLoose() {
	defer p.wg.Done()
	for {
		more, err := p.packLooseBatch(gitfs.LooseBatch, gitfs.LooseBatchBytes)
		p.mu.Lock()
		if err != nil || !more || p.closed {
			// The next run waits for as many loose objects again,
			// after a failure too, and whatever it left loose
			// (objects written meanwhile, or skipped): counting
			// those would start a run at every write.
			p.loose = 0
			p.packing = false
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
	}
}

// openBatch and openBatchBytes bound the loose objects packed as the
// repository opens, so that a repository git gc has never packed does not
// hold up the first read for long: 10,000 small objects took 0.3 s, and
// 128 MiB is some 300 trees of a directory of 10,000 files. The rest are
// packed in the background, LooseBatch at a time.
const (
	openBatch      = 20_000
	openBatchBytes = 128 << 20
)

// packLooseBatch packs a batch of loose objects, up to maxObjects of them
// and maxBytes of their content, and reports whether there are more.
func (p *packer) packLooseBatch(maxObjects int, maxBytes int64) (bool, error) {
	ctx, span := p.tracer.Start(p.ctx, "local.pack_loose")
	defer span.End()
	start := time.Now()
	res, err := gitfs.PackLoose(ctx, p.objects, p.objs, maxObjects, maxBytes)
	elapsed := time.Since(start)
	if res.Pack != "" {
		p.add(ownPack{name: res.Pack, size: res.PackBytes})
	}
	p.metrics.packedLoose(res, err, elapsed)
	span.SetAttributes(attribute.Int("cup.git.objects", res.Packed), attribute.Int("cup.git.removed", res.Removed),
		attribute.Int("cup.git.left_loose", res.Skipped), attribute.Int64("cup.git.pack_bytes", res.PackBytes))
	if errors.Is(err, gitfs.ErrPackLooseBusy) {
		p.log.DebugContext(ctx, "another process is packing the loose objects", "dir", p.objects, "error", err)
		return false, err
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		if ctx.Err() == nil {
			p.log.WarnContext(ctx, "packing loose objects failed; they stay loose until git gc", "dir", p.objects, "error", err)
		}
		return false, err
	}
	p.log.InfoContext(ctx, "packed loose objects", "dir", p.objects, "objects", res.Packed, "removed", res.Removed,
		"left_loose", res.Skipped, "bytes", res.PackBytes, "duration", elapsed.Round(time.Millisecond), "more", res.More)
	return res.More, nil
}

// add counts a new pack, and starts merging when it breaks the
// progression.
func (p *packer) add(pack ownPack) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.packs = append(p.packs, pack)
	p.metrics.count(1)
	if !p.merging && len(mergeSet(p.packs)) >= 2 {
		p.merging = true
		p.wg.Add(1)
		go p.mergeLoop()
	}
}

// mergeLoop merges packs until the progression holds.
func (p *packer) mergeLoop() {
	defer p.wg.Done()
	for {
		p.mu.Lock()
		set := mergeSet(p.packs)
		if p.closed || len(set) < 2 {
			p.merging = false
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		p.merge(set)
	}
}

// merge merges set, some of p.packs, into one.
func (p *packer) merge(set []ownPack) {
	ctx, span := p.tracer.Start(context.Background(), "local.merge_packs", trace.WithAttributes(attribute.Int("cup.git.packs", len(set))))
	defer span.End()
	names := make([]string, len(set))
	var in int64
	for i, pk := range set {
		names[i], in = pk.name, in+pk.size
	}
	start := time.Now()
	merged, size, err := gitfs.MergePacks(p.dir, names)
	elapsed := time.Since(start)
	p.mu.Lock()
	before := len(p.packs)
	p.packs = slices.DeleteFunc(p.packs, func(pk ownPack) bool { return slices.Contains(names, pk.name) })
	if merged != "" {
		p.packs = append(p.packs, ownPack{name: merged, size: size})
	}
	p.metrics.count(len(p.packs) - before)
	p.mu.Unlock()
	// The packs merged away go from the reader's mappings now, not at its
	// next miss, so that their disk space goes too.
	p.objs.Refresh()
	p.metrics.merged(err, elapsed)
	if err != nil {
		// The packs stay as they are, and out of later merges: a pack
		// that cannot be merged once (an object in two packs, a .keep)
		// cannot be the next time either.
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		p.log.WarnContext(ctx, "merging the packs of written objects failed; they stay as they are until git gc", "packs", len(set), "bytes", in, "error", err)
		return
	}
	span.SetAttributes(attribute.Int64("cup.git.pack_bytes", size))
	p.log.DebugContext(ctx, "merged the packs of written objects", "packs", len(set), "bytes", size, "duration", elapsed)
}

// close stops packing loose objects, waits for a merge under way, and
// starts nothing more.
func (p *packer) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.cancel()
	p.wg.Wait()
}

// mergeSet returns the packs to merge for the sizes of packs to make a
// progression of ratio 2, the smallest first, as git repack --geometric=2
// chooses them: below the largest pack that is less than twice the one
// under it, all of them, and then each larger one that is less than twice
// their sum. Nil means there is nothing to merge.
func mergeSet(packs []ownPack) []ownPack {
	if len(packs) < 2 {
		return nil
	}
	s := slices.SortedFunc(slices.Values(packs), func(a, b ownPack) int { return cmp.Compare(a.size, b.size) })
	split := 0
	for i := len(s) - 1; i > 0; i-- {
		if s[i].size < 2*s[i-1].size {
			split = i
			break
		}
	}
	if split == 0 {
		return nil
	}
	var sum int64
	for _, pk := range s[:split+1] {
		sum += pk.size
	}
	for split+1 < len(s) && s[split+1].size < 2*sum {
		split++
		sum += s[split].size
	}
	return s[:split+1]
}

// packMetrics are the metrics of the objects written by direct commits:
//
//   - cup_local_objects_written_total{as}: objects written, as a pack
//     (a group of commits) or loose;
//   - cup_local_write_objects_seconds: how long writing a group's objects
//     took, just before its branch moved;
//   - cup_local_packs: the packs this process may merge (written by it,
//     or found small at start) and has not merged away;
//   - cup_local_pack_merges_total{outcome}: merges of those packs, by
//     outcome (success, error), and cup_local_pack_merge_seconds, their
//     duration;
//   - cup_local_loose_packs_total{outcome}: batches of loose objects
//     packed (see packer.packLoose), by outcome (success, error, canceled,
//     busy: another process was packing them);
//     cup_local_loose_objects_packed_total, the objects they packed; and
//     cup_local_pack_loose_seconds, their duration.
//
// A nil *packMetrics records nothing.
type packMetrics struct {
	objects   *prometheus.CounterVec
	writeTime prometheus.Histogram
	packs     prometheus.Gauge
	merges    *prometheus.CounterVec
	mergeTime prometheus.Histogram
	looseRuns *prometheus.CounterVec
	loose     prometheus.Counter
	looseTime prometheus.Histogram
}

func newPackMetrics(reg prometheus.Registerer) (*packMetrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &packMetrics{
		objects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cup_local_objects_written_total",
			Help: "Objects written by direct commits to a local repository, as one pack for a group of commits or as loose objects.",
		}, []string{"as"}),
		writeTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "cup_local_write_objects_seconds",
			Help:    "Time writing the objects of a group of commits to a local repository took, just before its branch moved.",
			Buckets: prometheus.ExponentialBuckets(0.0002, 2, 14),
		}),
		packs: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "cup_local_packs",
			Help: "Packs of a local repository that this process may merge: those its groups of commits wrote, and small ones it found at start.",
		}),
		merges: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cup_local_pack_merges_total",
			Help: "Merges of the packs of written objects, by outcome (success, error).",
		}, []string{"outcome"}),
		mergeTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "cup_local_pack_merge_seconds",
			Help:    "Time a merge of packs of written objects took.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}),
		looseRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cup_local_loose_packs_total",
			Help: "Batches of a local repository's loose objects moved into a pack (once there are more than its gc.auto), by outcome (success, error, canceled, busy: another process was packing them).",
		}, []string{"outcome"}),
		loose: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cup_local_loose_objects_packed_total",
			Help: "Loose objects of a local repository moved into packs.",
		}),
		looseTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "cup_local_pack_loose_seconds",
			Help:    "Time moving a batch of loose objects into a pack took.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}),
	}
	if err := errors.Join(promreg.Register(reg, &m.objects), promreg.Register(reg, &m.writeTime),
		promreg.Register(reg, &m.packs), promreg.Register(reg, &m.merges), promreg.Register(reg, &m.mergeTime),
		promreg.Register(reg, &m.looseRuns), promreg.Register(reg, &m.loose), promreg.Register(reg, &m.looseTime)); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *packMetrics) flushTime(d time.Duration) {
	if m != nil {
		m.writeTime.Observe(d.Seconds())
	}
}

func (m *packMetrics) written(as string, objects int) {
	if m != nil {
		m.objects.WithLabelValues(as).Add(float64(objects))
	}
}

// count adds delta to the packs counted: sources that share the metrics
// add up.
func (m *packMetrics) count(delta int) {
	if m != nil {
		m.packs.Add(float64(delta))
	}
}

func (m *packMetrics) merged(err error, d time.Duration) {
	if m == nil {
		return
	}
	outcome := "success"
	if err != nil {
		outcome = "error"
	}
	m.merges.WithLabelValues(outcome).Inc()
	m.mergeTime.Observe(d.Seconds())
}

func (m *packMetrics) packedLoose(res gitfs.LoosePacked, err error, d time.Duration) {
	if m == nil {
		return
	}
	outcome := "success"
	switch {
	case errors.Is(err, context.Canceled):
		outcome = "canceled"
	case errors.Is(err, gitfs.ErrPackLooseBusy):
		outcome = "busy"
	case err != nil:
		outcome = "error"
	}
	m.looseRuns.WithLabelValues(outcome).Inc()
	m.loose.Add(float64(res.Packed))
	m.looseTime.Observe(d.Seconds())
}
