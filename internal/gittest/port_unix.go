//go:build unix

package gittest

import (
	"net"
	"syscall"
)

// closeAndHold closes ln and binds a socket to its address without
// listening on it, and returns a function that closes that socket. Until
// then connections to the address are refused, as no one listens, and the
// kernel gives the port to no other listener that asks for any free port,
// as it is taken.
func closeAndHold(ln net.Listener) (release func(), err error) {
	addr, ok := ln.Addr().(*net.TCPAddr)
	if !ok {
		return func() {}, ln.Close()
	}
	family := syscall.AF_INET
	var sa syscall.Sockaddr
	if ip4 := addr.IP.To4(); ip4 != nil {
		sa = &syscall.SockaddrInet4{Port: addr.Port, Addr: [4]byte(ip4)}
	} else {
		family = syscall.AF_INET6
		sa = &syscall.SockaddrInet6{Port: addr.Port, Addr: [16]byte(addr.IP.To16())}
	}
	// A child process between fork and exec holds a copy of every
	// descriptor, the listener's too, which then keeps listening after
	// Close. Forks wait for the fork lock's readers, and a fork that holds
	// the lock has exec'd once it lets go; so under the lock the listener
	// really closes, and no child inherits the new socket.
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	if err := ln.Close(); err != nil {
		return nil, err
	}
	fd, err := syscall.Socket(family, syscall.SOCK_STREAM, 0)
	if err != nil {
		return nil, err
	}
	syscall.CloseOnExec(fd)
	// SO_REUSEADDR lets the socket bind while connections the server
	// closed linger in TIME_WAIT on the port.
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	if err := syscall.Bind(fd, sa); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	return func() { syscall.Close(fd) }, nil
}
