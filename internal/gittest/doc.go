// Package gittest runs a real Git smart-HTTP server for tests.
//
// [NewServer] serves the bare repositories below a directory on 127.0.0.1
// with git http-backend, the CGI program that ships with Git, behind
// [net/http/cgi]. Clients speak to it exactly as they would to a hosted
// remote: the git command, go-git's HTTP transport, or cupd. Nothing leaves
// the machine. [Start] makes the same server for programs that are not
// tests, such as the load driver internal/cmd/cupsoak.
//
// # Repositories
//
// A repository is a bare repository at [Server.Path] of its name, served at
// [Server.URL] of the same name, for example "config.git". Create it with
// package gitrepo (gitrepo.Init(srv.Path("config.git"), ...)) or with
// git init --bare, before or while the server runs; it needs no
// configuration of its own. The server enables pushing (http.receivepack)
// for every repository and turns automatic garbage collection after a push
// off (receive.autogc, gc.auto), so no background git process outlives a
// request. Change a repository on disk at any time, for example with
// gitrepo.Commit, to play another user of the remote. [NewDemo] starts a
// server with the demo repository of package examples in place, and [Refs]
// lists a repository's references to check that nothing moved.
//
// git http-backend runs with a hermetic environment: HOME is an empty
// temporary directory and the system configuration is not read, so the
// configuration of the user running the tests never applies. REMOTE_USER is
// the user name of [WithBasicAuth], or "anonymous" without it.
//
// # Rejecting pushes
//
// To make the server reject pushes the way a protected branch does, write
// an executable pre-receive hook that exits non-zero into the repository:
//
//	hook := "#!/bin/sh\necho 'pushes are frozen' >&2\nexit 1\n"
//	os.MkdirAll(filepath.Join(srv.Path("config.git"), "hooks"), 0o777)
//	os.WriteFile(filepath.Join(srv.Path("config.git"), "hooks", "pre-receive"), []byte(hook), 0o755)
//
// The push then fails, nothing is updated, and the client receives the
// hook's output as "remote:" progress lines together with a per-reference
// status of "pre-receive hook declined". An update hook does the same for
// single references.
//
// # Failures
//
// [Server.SetFault] makes the server misbehave for the requests that
// follow: refuse them without an answer, answer 503, or cut a push before or
// after it lands. [Server.Close] takes the remote down for good: the
// listener is closed and new connections are refused. [Server.OnRequest]
// runs a function before each request, for example to move a branch right
// before a push arrives so the push loses the race. [Server.Count] tells
// how many fetches and pushes reached the server.
//
// # Concurrency
//
// The server handles any number of requests at once, each in its own git
// process. Concurrent pushes to one reference are decided by Git's own
// reference locking: one wins, the others get Git's normal report that the
// reference could not be updated. All methods of [Server] are safe for
// concurrent use.
package gittest
