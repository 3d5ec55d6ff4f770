// Package memsource is a [source.Source] over a Git repository held in
// memory, for tests and examples that need a source but no disk, network
// or git command.
//
// A [Repo] keeps objects in a go-git memory storage and references in a
// map that moves by compare-and-swap; [New] returns a Source over it.
// Several Sources may serve one Repo (in different write modes, say), and
// the Repo itself plays another writer (Repo.Commit, Repo.Branch) and
// reads back what sources wrote (Repo.Log, Repo.Files), as
// internal/gitrepo does for repositories on disk.
//
// Snapshots, overlays and tree building are those of the sources on disk
// (internal/gitfs), and updates run the same write engine
// (internal/writes: target resolution, locking, retries, change sets and
// idempotent replay) over a RefStore whose compare-and-swap moves the
// Repo's reference map. So a memsource answers as source/local does and
// passes the same conformance suite (source/sourcetest); only where
// objects and references live differs. Nothing here starts goroutines.
package memsource
