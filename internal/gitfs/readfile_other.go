//go:build !unix

package gitfs

import (
	"bytes"
	"os"
)

// readWhole appends the content of the file name to buf.
func readWhole(name string, buf *bytes.Buffer) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = buf.ReadFrom(f)
	return err
}
