// Package writes is the write engine of the sources: the one place that
// turns a source.UpdateRequest into a commit on a branch, for a
// repository on disk (source/local) and for a remote one (source/git)
// alike.
//
// The layering, from the contract down:
//
//	source/            the contract: Source, UpdateRequest, write modes, sentinel errors
//	source/local/      adapters: open a repository, serve View, and give the engine a RefStore
//	source/git/
//	internal/memsource/ (in memory, for tests)
//	internal/writes/   this package: target resolution, locking, retries,
//	                   idempotent replay and the options every source shares
//	internal/changeset/  stateless rules the engine applies: branch names, trailers,
//	                   owners, Prepare (apply and commit) and Lookup (replay)
//	internal/gitfs/    objects, trees, commits and references on disk
//
// An [Engine] works over a [RefStore], a contract of two calls: resolve a
// revision to a commit, and compare-and-swap a branch. Everything else
// about an update is the engine's:
//
//   - Target resolution: which branch the commit starts from and which it
//     goes on, by the request (a change set, a revision) and the write
//     mode ([Config.Mode]); only branches are writable.
//   - Group commit: updates of a branch that exists queue while the group
//     before them is published; then up to [Config.GroupMax] of them are
//     applied one on another, each its own commit, and published with one
//     compare-and-swap (one push), each answered when it lands (group.go).
//     Updates that create a change set named by a key take a lock; new
//     change sets with random names need none.
//   - Retries: when the compare-and-swap finds the branch moved
//     ([ErrMoved]), the change is applied again on the new head, up to
//     [Config.MaxRetries] times, and then fails with source.ErrConflict.
//   - Idempotent replay: an update with a key looks for a commit recording
//     it on the branch it would write, before every attempt, and answers
//     with that commit's result instead of writing again.
//   - Options: author, clock, signer, write mode, change-set prefix,
//     retries and logger, with their defaults and checks ([Config]).
//
// The sources differ only in how refs and objects move, which their
// RefStore hides: the local one writes objects into the repository in
// place as the commit is made and moves the branch with Git's lock file;
// the remote one writes objects into its clone and pushes exactly the new
// ones, naming the branch's old value so that the remote moves it only if
// nobody else did. Optional abilities are separate interfaces found by
// type assertion: a [Syncer] is brought up to date before a keyed update
// looks for an earlier attempt (the remote fetches), and a
// [WritableChecker] may refuse a branch in direct mode (the local source
// refuses a branch a work tree has checked out).
package writes
