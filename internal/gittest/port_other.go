//go:build !unix

package gittest

import "net"

// closeAndHold closes ln. Holding its port is not implemented here: another
// listener may be given the port of a closed server.
func closeAndHold(ln net.Listener) (release func(), err error) {
	return func() {}, ln.Close()
}
