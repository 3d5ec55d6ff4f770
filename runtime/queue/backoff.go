package queue

import (
	"math"
	"time"
)

// Backoff computes the delay before retrying a key after failures. The
// n-th retry (n counting from 0) waits Base*Factor^n, capped at Cap, then
// scaled by a jitter factor in [1-Jitter, 1+Jitter), then clamped again to
// [0, Cap]: a delay never exceeds Cap and is never negative.
type Backoff struct {
	// Base is the delay before the first retry.
	Base time.Duration
	// Factor multiplies the delay after each failure.
	Factor float64
	// Jitter is the relative spread of the delay: 0.5 means ±50%.
	Jitter float64
	// Cap bounds the delay; zero or negative means no bound other than
	// the largest [time.Duration].
	Cap time.Duration
}

// DefaultBackoff returns the backoff of the COSI runtime (that of
// github.com/cenkalti/backoff): Base 500ms, Factor 1.5, Jitter 0.5 (±50%)
// and Cap 60s, so retries come after about 0.5s, 0.75s, 1.1s, 1.7s, ...
// and at most a minute apart.
//
// The reconcilers here write commits to Git, so a failure usually means a
// remote, a push or a module failed. client-go's default of 5ms for the
// first retry would hammer a Git host that is already in trouble, and its
// 1,000s cap would leave configuration stale for a quarter of an hour
// after the host recovers.
func DefaultBackoff() Backoff {
	return Backoff{
		Base:   500 * time.Millisecond,
		Factor: 1.5,
		Jitter: 0.5,
		Cap:    60 * time.Second,
	}
}

// Delay returns the wait before the retry that follows failures earlier
// failures (0 for the first retry), where r in [0, 1) is the random draw
// for the jitter; r = 0.5 gives the delay without jitter.
func (b Backoff) Delay(failures int, r float64) time.Duration {
	limit := float64(math.MaxInt64)
	if b.Cap > 0 {
		limit = float64(b.Cap)
	}
	d := float64(b.Base) * math.Pow(b.Factor, float64(max(failures, 0)))
	if math.IsNaN(d) {
		d = 0
	}
	d = min(d, limit)
	d *= 1 + b.Jitter*(2*r-1)
	if math.IsNaN(d) || d <= 0 {
		return 0
	}
	if d >= limit {
		if b.Cap > 0 {
			return b.Cap
		}
		return math.MaxInt64
	}
	return time.Duration(d)
}
