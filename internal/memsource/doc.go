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
// Snapshots, overlays, tree building, change sets and idempotent replay
// are those of the sources on disk (internal/gitfs, internal/changeset), so
// a memsource answers as source/local does and passes the same
// conformance suite (source/sourcetest); only where objects and
// references live differs. Nothing here starts goroutines.
package memsource
