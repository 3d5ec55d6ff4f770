//go:build !unix

package gitfs

import (
	"errors"
	"os"
)

func mapFile(uintptr, int) ([]byte, error) { return nil, errors.ErrUnsupported }

func unmapFile([]byte) error { return nil }

func sameInode(a, b os.FileInfo) bool { return false }
