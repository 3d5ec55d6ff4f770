// Package runtime keeps derived configuration in a repository in sync:
// reconcilers, in the sense of Consul's v2 controllers and the COSI
// runtime, whose outputs are resources written back to Git through the
// normal write path.
//
// A reconciler names a primary type (one reconcile per primary resource),
// watched input types with mappers that say which primaries a change
// wakes, the output types it may write, and a [Transform] that computes
// the desired outputs from the inputs. The runtime turns commits into
// work (a keyed queue with coalescing and backoff), reads inputs through a
// cache of the head commit with secondary indexes, writes the outputs
// that differ (and deletes the primary's outputs that the run no longer
// produced) as one commit per batch, and derives status conditions per
// commit without committing them.
//
// [Runtime.Resync] reconciles every primary again at once, as the periodic
// resync does, and [Runtime.WaitIdle] waits until the runtime has caught
// up with the branch: together they let tests, benchmarks and tools write
// and then wait for the outputs, without sleeping.
package runtime
