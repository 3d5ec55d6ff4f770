// Package gitfs is the Git plumbing shared by the sources: file systems over
// the trees of commits, a writable overlay that records changes, and a tree
// builder that turns those changes into new tree and commit objects.
//
// The layers, from the bottom:
//
//   - [Store] reads objects from a go-git [storer.EncodedObjectStorer] and
//     writes objects through an [ObjectWriter]. go-git storers are not safe
//     for concurrent use, so the Store serialises every call it makes to one.
//     Decoded trees are kept in a [TreeCache] shared by every snapshot:
//     trees are immutable, so entries never go stale.
//   - [FS] is a read-only [io/fs.FS] over one tree. It implements
//     fs.ReadFileFS, fs.ReadDirFS, fs.StatFS and fs.ReadLinkFS; symbolic
//     links are followed inside the tree and never out of it.
//   - [Overlay] is a writable view over an FS: writes and removals are kept
//     in memory and reads see them. [Overlay.Changes] reports the net effect.
//   - [Store.BuildTree] writes the blobs of a set of changes and rebuilds
//     only the trees along the changed paths; [Store.WriteCommit] writes a
//     commit. Nothing walks or checks out the whole repository.
//   - [Store.ReadCommit] decodes commits (through a cache of its own, for
//     history walks) and [Store.DiffTrees] compares two trees, reading only
//     the subtrees that differ.
//   - [Refs] reads and moves the references of a repository on disk with
//     Git's own lock-file protocol, so that it interoperates with the git
//     command and other implementations working on the same repository.
//   - [LooseWriter] writes loose objects straight into an objects directory.
//   - [ResolveRevision] resolves the revision syntax beyond names and ids
//     (short ids, main~1) with go-git, mapping its errors to the sources'.
//
// Nothing in this package starts goroutines.
package gitfs
