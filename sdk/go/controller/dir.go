package controller

import (
	"io/fs"
	"os"
	"path/filepath"
)

// OSDir returns a [Dir] over the directory root of the operating system's
// file system. [Main] uses OSDir("/"), the tree cupd mounts; tests may use a
// temporary directory.
func OSDir(root string) Dir {
	return osDir{FS: os.DirFS(root), root: root}
}

type osDir struct {
	fs.FS
	root string
}

var _ Dir = osDir{}

// path returns the operating system's path of name.
func (d osDir) path(op, name string) (string, error) {
	if !fs.ValidPath(name) || name == "." {
		return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	return filepath.Join(d.root, filepath.FromSlash(name)), nil
}

func (d osDir) WriteFile(name string, data []byte) error {
	p, err := d.path("write", name)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, data, 0o644)
}

func (d osDir) Remove(name string) error {
	p, err := d.path("remove", name)
	if err != nil {
		return err
	}
	return os.Remove(p)
}
