package scm

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// EnvToken returns a TokenSource reading the environment variable name at
// each call, trimmed of surrounding white space. An unset or empty variable
// is an error that names the variable.
func EnvToken(name string) TokenSource { return envToken(name) }

type envToken string

func (e envToken) Token(context.Context) (string, error) {
	if tok := strings.TrimSpace(os.Getenv(string(e))); tok != "" {
		return tok, nil
	}
	return "", fmt.Errorf("the token's environment variable %s is unset or empty", string(e))
}

// maxTokenFile bounds the size of a token file.
const maxTokenFile = 64 << 10

// racyWindow is how close to the time a token file was read its
// modification time may be for a rewrite in the same timestamp tick to go
// unnoticed; such a file is read again at each call until it is older.
const racyWindow = 2 * time.Second

// FileToken returns a TokenSource reading the token from the file at path,
// trimmed of surrounding white space; an empty file is an error. It suits
// short-lived tokens that another process rotates on disk (as Kubernetes
// does with projected volumes): each call stats the file and reads it
// again only when its inode, size or modification time changed, so an
// unchanged file costs one stat. Errors are not remembered: the next call
// tries again. Rotate the file by renaming a new one over it, so that a
// call never reads it half-written.
//
// FileToken does no I/O until the first call.
func FileToken(path string) TokenSource { return &fileToken{path: path} }

type fileToken struct {
	path string

	mu    sync.Mutex
	info  os.FileInfo // of the file the token was read from
	read  time.Time   // when it was read
	token string
}

func (f *fileToken) Token(context.Context) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	info, err := os.Stat(f.path)
	if err != nil {
		return "", fmt.Errorf("reading the token file: %w", err)
	}
	if f.info != nil && os.SameFile(f.info, info) && f.info.Size() == info.Size() &&
		f.info.ModTime().Equal(info.ModTime()) && info.ModTime().Before(f.read.Add(-racyWindow)) {
		return f.token, nil
	}
	return f.load()
}

// load reads the token file and remembers it.
func (f *fileToken) load() (string, error) {
	read := time.Now()
	file, err := os.Open(f.path)
	if err != nil {
		return "", fmt.Errorf("reading the token file: %w", err)
	}
	defer file.Close()
	info, err := file.Stat()
	if err != nil {
		return "", fmt.Errorf("reading the token file: %w", err)
	}
	if info.Size() > maxTokenFile {
		return "", fmt.Errorf("the token file %s is too large (%d bytes) to hold a token", f.path, info.Size())
	}
	b, err := io.ReadAll(io.LimitReader(file, maxTokenFile))
	if err != nil {
		return "", fmt.Errorf("reading the token file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("the token file %s is empty", f.path)
	}
	f.info, f.read, f.token = info, read, tok
	return tok, nil
}
