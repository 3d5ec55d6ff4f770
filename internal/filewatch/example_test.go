package filewatch_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cup-dev/cup/internal/filewatch"
)

// greeting is a file whose content is a greeting; a change is a change of
// content.
type greeting string

func (g greeting) Read() ([]byte, error) { return os.ReadFile(string(g)) }

func (greeting) Same(prev, cur []byte) bool { return bytes.Equal(prev, cur) }

func (greeting) Parse(data []byte) (*string, error) {
	s := strings.TrimSpace(string(data))
	if s == "" {
		return nil, fmt.Errorf("no greeting")
	}
	return &s, nil
}

func Example() {
	dir, err := os.MkdirTemp("", "filewatch")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "greeting.txt")

	// Run(ctx, interval) would reload the file whenever it changes; here
	// Reload does it on demand.
	v := filewatch.New(greeting(path), filewatch.Log[string]{})
	for _, content := range []string{"hello\n", "\n", "bonjour\n"} {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			panic(err)
		}
		err := v.Reload()
		fmt.Printf("%q (error: %v)\n", *v.Load(), err)
	}
	// Output:
	// "hello" (error: <nil>)
	// "hello" (error: no greeting)
	// "bonjour" (error: <nil>)
}
