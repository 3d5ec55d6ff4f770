//go:build unix

package gitfs

import (
	"bytes"
	"syscall"
)

// readWhole appends the content of the file name to buf with bare system
// calls: open, read until the end, close. os.Open costs as much again for
// a small file, registering it with the network poller (which refuses
// regular files) and setting up its cleanup; a listing of ten thousand
// loose objects opens ten thousand files.
func readWhole(name string, buf *bytes.Buffer) error {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(name, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	for {
		buf.Grow(4096)
		spare := buf.AvailableBuffer()
		n, err := syscall.Read(fd, spare[:cap(spare)])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		buf.Write(spare[:n])
	}
}
