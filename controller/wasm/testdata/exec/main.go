// Command exec is a module for the tests of Controller.Exec: its first
// argument picks what it does.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: echo|exit|loop|alloc|flood|panic [args ...]")
		os.Exit(1)
	}
	switch os.Args[1] {
	case "echo":
		// Reports what it was given and what it can do with the tree.
		stdin, _ := io.ReadAll(os.Stdin)
		var root []string
		entries, err := os.ReadDir("/")
		for _, e := range entries {
			root = append(root, e.Name())
		}
		in, _ := os.ReadFile("/in.txt")
		werr := os.WriteFile("/out.txt", []byte("x"), 0o644)
		json.NewEncoder(os.Stdout).Encode(map[string]any{
			"args":  os.Args,
			"env":   os.Environ(),
			"stdin": string(stdin),
			"root":  root,
			"ls":    fmt.Sprint(err),
			"in":    string(in),
			"write": fmt.Sprint(werr),
		})
		fmt.Fprintln(os.Stderr, "echoed")
	case "exit":
		// exit <code> <message>: the message on stderr, and "out" on stdout.
		code, _ := strconv.Atoi(os.Args[2])
		fmt.Print("out")
		fmt.Fprintln(os.Stderr, os.Args[3])
		os.Exit(code)
	case "loop":
		for {
		}
	case "alloc":
		var keep [][]byte
		for {
			b := make([]byte, 1<<20)
			b[len(b)-1] = 1
			keep = append(keep, b)
		}
	case "flood":
		chunk := bytes.Repeat([]byte("x"), 1<<20)
		for range 20 {
			os.Stdout.Write(chunk)
		}
	case "panic":
		panic("boom: exec panicked")
	default:
		fmt.Fprintf(os.Stderr, "unknown verb %q\n", os.Args[1])
		os.Exit(1)
	}
}
