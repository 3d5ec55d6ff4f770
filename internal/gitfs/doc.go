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
//   - [ObjectDir] reads the objects of an objects directory, loose and
//     packed (with deltas), itself: without go-git and without the Store's
//     lock, so a listing decodes its files on every core. A store given one
//     ([WithObjectDir]) reads through it first and through the storer only
//     what it does not find (alternates). Cold reads of repositories with
//     many loose objects are why: go-git costs several lstat calls per
//     loose object and serialises every read, which made the first listing
//     of 10,000 loose files take most of a second. A loose object here is
//     one open, one read and an inflate with a pooled zlib reader, and a
//     packed one a binary search of the mapped index and an inflate from
//     the mapped pack. Nothing is packed, indexed or written on open: an
//     index or pack of loose objects built at open would cost the same file
//     reads once more, and a cache directory's copy would go stale with
//     every git commit or gc; reading the files straight and in parallel
//     is cheaper than either.
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
//     [Staging] keeps the objects of commits in memory until the branch is
//     about to move, and then writes those of a group of commits as one
//     pack (trees as deltas of each other), and [MergePacks] merges such
//     packs by copying their entries, so that they stay few.
//   - [ResolveRevision] resolves the revision syntax beyond names and ids
//     (short ids, main~1) with go-git, mapping its errors to the sources'.
//
// Nothing in this package starts goroutines.
package gitfs
