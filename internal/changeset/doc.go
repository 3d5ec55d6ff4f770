// Package changeset is what the sources share about change sets and
// idempotent updates, so that every source names branches, records keys
// and recognises repeated requests the same way, and a repository written
// by one can be served by another.
//
// A change set is a branch <prefix><id> that an update in
// [source.ModeBranch] makes from the head of its target branch; later
// updates add commits to it. [BranchName] makes its name: random for an
// update without idempotency key, derived from the key (and the
// requester, [KeyBranchName]) otherwise, so that a repeated request can
// never make a second branch. A change set belongs to the requester of
// the update that made it: its commits record the owner, and [Prepare]
// refuses another requester's update of it unless the request overrides
// the owner ([CheckOwner], [Owner]).
//
// An update records who asked for it, and with an idempotency key the key
// and the request's fingerprint, as trailers at the end of its commit
// message ([Message]); only those trailers count when reading them back
// ([Recorded]), and callers' messages may not carry them
// (source.CheckMessage, [CheckRequest]). Before applying a keyed update a
// source looks for an earlier commit with the key and requester on the
// branch the update would write, and if it finds one answers with that
// commit's result instead of writing again ([Lookup], built on [Find] and
// [Replay]).
// Because the record lives in the repository, a repeat is recognised by any
// process, after any failure, also when the first caller never saw its
// answer.
//
// Nothing in this package starts goroutines or keeps state; its functions
// are safe for concurrent use.
package changeset
