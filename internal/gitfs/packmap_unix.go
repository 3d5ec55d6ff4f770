//go:build unix

package gitfs

import (
	"os"
	"syscall"
)

func mapFile(fd uintptr, size int) ([]byte, error) {
	return syscall.Mmap(int(fd), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
}

func unmapFile(data []byte) error { return syscall.Munmap(data) }

// sameInode reports whether two descriptions are of the same file; unlike
// os.SameFile it takes the wrapped descriptions billy's file systems give.
func sameInode(a, b os.FileInfo) bool {
	sa, ok := a.Sys().(*syscall.Stat_t)
	sb, ok2 := b.Sys().(*syscall.Stat_t)
	return ok && ok2 && sa.Dev == sb.Dev && sa.Ino == sb.Ino
}
