// Command faults is a controller module for cup's wasm controller that
// misbehaves on demand: the name in its arguments (or, for list, the
// namespace) picks the fault. The tests use it to check the limits, the
// error mapping and the file systems a module sees.
package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 4 {
		fmt.Fprintln(os.Stderr, "usage: <verb> <kind> <namespace> [<name>|key=value...]")
		os.Exit(1)
	}
	verb, namespace, name := os.Args[1], os.Args[3], ""
	if len(os.Args) > 4 {
		name = os.Args[4]
	}
	if verb == "list" {
		list(namespace)
		return
	}
	switch name {
	case "ok":
		emit(name, nil, "")
	case "loop":
		for {
		}
	case "writeloop":
		// Changes the tree, then reads /go.txt, which tells the test it
		// did, and never ends: for stopping a put midway.
		os.WriteFile("/partial.txt", []byte("half"), 0o644)
		os.Remove("/keep.txt")
		os.ReadFile("/go.txt")
		for {
		}
	case "touch":
		if err := os.WriteFile("/touched.txt", []byte("ok"), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	case "alloc":
		var keep [][]byte
		for {
			b := make([]byte, 1<<20)
			b[len(b)-1] = 1
			keep = append(keep, b)
		}
	case "panic":
		panic("boom: the module panicked")
	case "garbage":
		fmt.Print("this is not JSON {")
	case "missing":
		fmt.Fprintln(os.Stderr, "no flag named missing here")
		os.Exit(2)
	case "fail":
		fmt.Fprintln(os.Stderr, "something broke\nin two lines")
		os.Exit(1)
	case "exit3":
		os.Exit(3)
	case "silent":
		// Exits 0 and writes nothing, as the original Cup's Flipt
		// controller does for a namespace it has no document of.
	case "origmissing":
		// The original Cup's Flipt controller: its not-found error is not
		// its SDK's, so it exits 1, with the text and no newline.
		fmt.Fprintf(os.Stderr, "flag %s/%s: not found", namespace, name)
		os.Exit(1)
	case "jsonmessage":
		fmt.Fprintln(os.Stderr, `{"message": "the flag store is locked by another writer"}`)
		os.Exit(1)
	case "invalid":
		fmt.Fprintln(os.Stderr, "checking the rollout")
		fmt.Fprintln(os.Stderr, `{"code": "invalid_argument", "message": "spec.rollout must be between 0 and 100"}`)
		os.Exit(1)
	case "flood":
		chunk := bytes.Repeat([]byte("x"), 1<<20)
		for range 20 {
			os.Stdout.Write(chunk)
		}
	case "chatty":
		fmt.Fprint(os.Stderr, strings.Repeat("é", 4000))
		os.Exit(1)
	case "wrongkind":
		emit(name, nil, "Other")
	case "wrongname":
		emit("someone-else", nil, "")
	case "env":
		r := make([]byte, 16)
		rand.Read(r)
		wd, _ := os.Getwd()
		t0 := time.Now()
		time.Sleep(time.Hour)
		emit(name, map[string]any{
			"args":  os.Args,
			"env":   os.Environ(),
			"now":   t0.UnixNano(),
			"slept": time.Since(t0).String(),
			"rand":  hex.EncodeToString(r),
			"wd":    wd,
		}, "")
	case "escape":
		escape(verb)
	case "fsops":
		fsops()
	case "dotgit":
		dotgit()
	case "bigfile":
		// Writes until refused, and then pretends all went well.
		f, _ := os.Create("/big.bin")
		chunk := bytes.Repeat([]byte("b"), 1<<20)
		for {
			if _, err := f.Write(chunk); err != nil {
				fmt.Fprintln(os.Stderr, "stopped writing:", err)
				break
			}
		}
		f.Close()
	case "failput":
		os.WriteFile("/partial.txt", []byte("half"), 0o644)
		os.MkdirAll("/new/dir", 0o755)
		os.WriteFile("/new/dir/file.txt", []byte("half"), 0o644)
		os.Remove("/keep.txt")
		fmt.Fprintln(os.Stderr, "gave up after writing")
		os.Exit(1)
	default:
		fmt.Fprintf(os.Stderr, "no fault named %q\n", name)
		os.Exit(1)
	}
}

// emit prints a resource of CUP_API_VERSION named name. kind "" is
// CUP_KIND.
func emit(name string, spec map[string]any, kind string) {
	if kind == "" {
		kind = os.Getenv("CUP_KIND")
	}
	json.NewEncoder(os.Stdout).Encode(map[string]any{
		"apiVersion": os.Getenv("CUP_API_VERSION"),
		"kind":       kind,
		"metadata":   map[string]any{"name": name},
		"spec":       spec,
	})
}

func list(namespace string) {
	switch namespace {
	case "array":
		// An array, out of order, with a resource of another kind.
		fmt.Printf(`[
			{"apiVersion": %[1]q, "kind": %[2]q, "metadata": {"name": "b", "labels": {"env": "prod"}}},
			{"apiVersion": %[1]q, "kind": "Other", "metadata": {"name": "other"}},
			{"apiVersion": %[1]q, "kind": %[2]q, "metadata": {"namespace": "array", "name": "a"}, "spec": {"x": 1}}
		]`, os.Getenv("CUP_API_VERSION"), os.Getenv("CUP_KIND"))
	case "stream":
		for _, n := range []string{"c", "a", "b"} {
			fmt.Printf(`{"apiVersion": %q, "kind": %q, "metadata": {"name": %q}}`, os.Getenv("CUP_API_VERSION"), os.Getenv("CUP_KIND"), n)
		}
	case "args":
		// Echoes the arguments, with labels that satisfy them.
		labels := map[string]string{}
		for _, a := range os.Args[4:] {
			k, v, _ := strings.Cut(a, "=")
			labels[k] = v
		}
		json.NewEncoder(os.Stdout).Encode(map[string]any{
			"apiVersion": os.Getenv("CUP_API_VERSION"), "kind": os.Getenv("CUP_KIND"),
			"metadata": map[string]any{"name": "args", "labels": labels},
			"spec":     map[string]any{"args": os.Args[1:]},
		})
	case "dup":
		emit("same", nil, "")
		emit("same", nil, "")
	case "foreign":
		fmt.Printf(`{"apiVersion": %q, "kind": %q, "metadata": {"namespace": "elsewhere", "name": "x"}}`, os.Getenv("CUP_API_VERSION"), os.Getenv("CUP_KIND"))
	case "badspec":
		fmt.Printf(`{"apiVersion": %q, "kind": %q, "metadata": {"name": "x"}, "spec": [1]}`, os.Getenv("CUP_API_VERSION"), os.Getenv("CUP_KIND"))
	case "missing":
		os.Exit(2)
	case "invalid":
		fmt.Fprintln(os.Stderr, `{"code": "invalid", "message": "no such namespace pattern"}`)
		os.Exit(2)
	case "empty":
	default:
		fmt.Fprintf(os.Stderr, "no fault named %q\n", namespace)
		os.Exit(1)
	}
}

// escape tries to leave the tree, and to change it. Every attempt must
// fail: it exits 1 listing the errors, after printing ESCAPED for any that
// did not. On put, writes inside the tree must work.
func escape(verb string) {
	var report []string
	try := func(what string, err error) {
		if err == nil {
			fmt.Printf("ESCAPED: %s\n", what)
			report = append(report, "ESCAPED: "+what)
			return
		}
		report = append(report, fmt.Sprintf("%s: %v", what, err))
	}
	// Raw WASI paths relative to the root's descriptor (3), which Go's os
	// package would clean.
	for _, p := range []string{"../canary", "../../canary", "/canary", "a/../../canary"} {
		fd, err := syscall.Openat(3, p, syscall.O_RDONLY, 0)
		if err == nil {
			syscall.Close(fd)
		}
		try("openat "+p, err)
		fd, err = syscall.Openat(3, p, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_TRUNC, 0o644)
		if err == nil {
			syscall.Close(fd)
		}
		try("create "+p, err)
	}
	try("mkdir .git", os.Mkdir("/.git", 0o755))
	try("write .git/config", os.WriteFile("/.git/config", []byte("x"), 0o644))
	if verb == "get" {
		try("write /present.json", os.WriteFile("/present.json", []byte("changed"), 0o644))
		try("write /new.json", os.WriteFile("/new.json", []byte("new"), 0o644))
		try("remove /present.json", os.Remove("/present.json"))
		try("mkdir /newdir", os.Mkdir("/newdir", 0o755))
		try("rename /present.json", os.Rename("/present.json", "/renamed.json"))
		fmt.Fprintln(os.Stderr, strings.Join(report, "\n"))
		os.Exit(1)
	}
	// On put: "/../inside.txt" is /inside.txt, in the tree.
	if err := os.WriteFile("/../inside.txt", []byte("inside"), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "writing inside the tree:", err)
		os.Exit(1)
	}
	if slices.ContainsFunc(report, func(s string) bool { return strings.HasPrefix(s, "ESCAPED") }) {
		fmt.Fprintln(os.Stderr, strings.Join(report, "\n"))
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, strings.Join(report, "\n"))
}

// fsops changes the tree in every way the overlay supports, checking what it
// reads back as it goes; it exits 1 listing what was not as expected. The
// tree it starts from is in the tests.
func fsops() {
	var problems []string
	check := func(what string, err error) {
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", what, err))
		}
	}
	expect := func(what string, got, want any) {
		if fmt.Sprint(got) != fmt.Sprint(want) {
			problems = append(problems, fmt.Sprintf("%s = %v, want %v", what, got, want))
		}
	}
	readFile := func(p string) string {
		b, err := os.ReadFile(p)
		check("read "+p, err)
		return string(b)
	}
	names := func(p string) []string {
		entries, err := os.ReadDir(p)
		check("readdir "+p, err)
		var out []string
		for _, e := range entries {
			n := e.Name()
			if e.IsDir() {
				n += "/"
			}
			out = append(out, n)
		}
		return out
	}

	// New directories and files; reads see writes at once.
	check("mkdir -p /a/b", os.MkdirAll("/a/b", 0o755))
	check("write /a/b/c.txt", os.WriteFile("/a/b/c.txt", []byte("c"), 0o644))
	expect("/a/b/c.txt", readFile("/a/b/c.txt"), "c")
	_, err := os.Stat("/nodir/x.txt")
	expect("stat /nodir/x.txt is missing", errors.Is(err, fs.ErrNotExist), true)
	expect("write /nodir/x.txt fails", os.WriteFile("/nodir/x.txt", nil, 0o644) != nil, true)

	// Truncate, append, seek.
	check("truncate /trunc.txt", os.Truncate("/trunc.txt", 3))
	expect("/trunc.txt", readFile("/trunc.txt"), "012")
	f, err := os.OpenFile("/log.txt", os.O_WRONLY|os.O_APPEND, 0)
	check("open /log.txt to append", err)
	if err == nil {
		_, err = f.WriteString("b\n")
		check("append to /log.txt", err)
		check("close /log.txt", f.Close())
	}
	f, err = os.Open("/log.txt")
	check("open /log.txt", err)
	if err == nil {
		_, err := f.Seek(2, io.SeekStart)
		check("seek /log.txt", err)
		rest, err := io.ReadAll(f)
		check("read /log.txt after seeking", err)
		expect("/log.txt from 2", string(rest), "b\n")
		f.Close()
	}
	// Two handles on one file share it.
	w, err := os.Create("/shared.txt")
	check("create /shared.txt", err)
	r, err := os.Open("/shared.txt")
	check("open /shared.txt", err)
	if w != nil && r != nil {
		w.WriteString("one")
		got, _ := io.ReadAll(r)
		expect("/shared.txt through the other handle", string(got), "one")
		w.Close()
		r.Close()
	}
	check("remove /shared.txt", os.Remove("/shared.txt"))

	// Removing and renaming files of the tree.
	check("remove /gone.txt", os.Remove("/gone.txt"))
	_, err = os.Stat("/gone.txt")
	expect("stat /gone.txt after removing it is missing", errors.Is(err, fs.ErrNotExist), true)
	check("mkdir /new", os.Mkdir("/new", 0o755))
	check("rename /old/name.txt", os.Rename("/old/name.txt", "/new/name.txt"))
	expect("/new/name.txt", readFile("/new/name.txt"), "moved")
	expect("/old", names("/old"), []string{})
	check("rmdir /old", os.Remove("/old"))

	// Renaming a directory, removing an empty one, not a full one.
	check("mkdir /tmpdir/sub", os.MkdirAll("/tmpdir/sub", 0o755))
	check("write /tmpdir/sub/x", os.WriteFile("/tmpdir/sub/x", []byte("x"), 0o644))
	check("rename /tmpdir", os.Rename("/tmpdir", "/renamed"))
	expect("/renamed", names("/renamed"), []string{"sub/"})
	expect("/renamed/sub/x", readFile("/renamed/sub/x"), "x")
	check("mkdir /empty", os.Mkdir("/empty", 0o755))
	check("rmdir /empty", os.Remove("/empty"))
	expect("rmdir /dir fails", os.Remove("/dir") != nil, true)
	expect("mkdir /dir fails", os.Mkdir("/dir", 0o755) != nil, true)
	_, err = os.OpenFile("/a", os.O_WRONLY, 0)
	expect("opening /a for writing fails", err != nil, true)

	// A file replaced by a directory, and back.
	check("remove /swap", os.Remove("/swap"))
	check("mkdir /swap", os.Mkdir("/swap", 0o755))
	check("write /swap/inner.txt", os.WriteFile("/swap/inner.txt", []byte("inner"), 0o644))

	// Writes that change nothing.
	check("rewrite /keep.txt", os.WriteFile("/keep.txt", []byte("keep"), 0o644))
	check("write /temp.txt", os.WriteFile("/temp.txt", []byte("t"), 0o644))
	check("remove /temp.txt", os.Remove("/temp.txt"))
	check("chtimes /keep.txt", os.Chtimes("/keep.txt", time.Unix(1, 0), time.Unix(1, 0)))

	expect("/", names("/"), []string{"a/", "dir/", "keep.txt", "log.txt", "new/", "renamed/", "swap/", "trunc.txt"})
	if len(problems) > 0 {
		fmt.Fprintln(os.Stderr, strings.Join(problems, "\n"))
		os.Exit(1)
	}
}

// dotgit makes files and directories named .git in other cases, which a
// put must refuse as EPERM where it makes them: at open, mkdir or rename.
// It exits 1 listing what was not refused. The tree it starts from holds
// .GIT/keep; /ok.txt, which it writes, is the one change it leaves.
func dotgit() {
	var problems []string
	check := func(what string, err error) {
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", what, err))
		}
	}
	refused := func(what string, err error) {
		if !errors.Is(err, syscall.EPERM) {
			problems = append(problems, fmt.Sprintf("%s: %v, want EPERM", what, err))
		}
	}
	_, err := os.Stat("/.GIT/keep")
	check("stat /.GIT/keep", err)
	refused("create /.GIT/x", os.WriteFile("/.GIT/x", []byte("x"), 0o644))
	refused("create /.Git", os.WriteFile("/.Git", []byte("x"), 0o644))
	refused("mkdir /.git", os.Mkdir("/.git", 0o755))
	check("mkdir /a", os.Mkdir("/a", 0o755))
	refused("mkdir /a/.gIt", os.Mkdir("/a/.gIt", 0o755))
	check("write /ok.txt", os.WriteFile("/ok.txt", []byte("ok"), 0o644))
	refused("rename /ok.txt /a/.GIT", os.Rename("/ok.txt", "/a/.GIT"))
	if len(problems) > 0 {
		fmt.Fprintln(os.Stderr, strings.Join(problems, "\n"))
		os.Exit(1)
	}
}
