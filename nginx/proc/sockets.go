package proc

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// listenBacklog asks for the longest accept queue the kernel allows: it
// caps the value at net.core.somaxconn (4096 by default since Linux 5.4),
// as it does for Go's own listeners. Clients reconnect in crowds (after a
// reload closes their keep-alive connections, while nginx restarts), and a
// full queue drops their SYNs, each retried after 1 s and then doubling:
// with nginx's own 511, 8,006 connections were dropped in one worker-join
// scenario and 68 requests hung past 30 s (tests/reliability/HISTORY.md).
// nginx keeps the queue of a socket it inherits unless a listen directive
// sets backlog=.
const listenBacklog = 65535

// openListeners opens a listening TCP socket for each address, as nginx
// would open it for its listen directive (SO_REUSEADDR, IPV6_V6ONLY for
// IPv6, non-blocking), to hand it to every nginx master it starts. The
// sockets then outlive nginx: a restart never refuses a connection, the
// kernel queues them in the backlog meanwhile.
func openListeners(addrs []netip.AddrPort) ([]*os.File, error) {
	var files []*os.File
	for _, ap := range addrs {
		f, err := openListener(ap)
		if err != nil {
			closeAll(files)
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

func openListener(ap netip.AddrPort) (*os.File, error) {
	family := syscall.AF_INET
	if ap.Addr().Is6() {
		family = syscall.AF_INET6
	}
	fd, err := syscall.Socket(family, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", ap, err)
	}
	err = syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1)
	var sa syscall.Sockaddr
	if family == syscall.AF_INET6 {
		if err == nil {
			err = syscall.SetsockoptInt(fd, syscall.IPPROTO_IPV6, syscall.IPV6_V6ONLY, 1)
		}
		sa = &syscall.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
	} else {
		sa = &syscall.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	}
	if err == nil {
		err = syscall.Bind(fd, sa)
	}
	if err == nil {
		err = syscall.Listen(fd, listenBacklog)
	}
	if err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("listening on %s: %w", ap, err)
	}
	// A blocking fd makes a plain *os.File, whose Fd (os/exec calls it for
	// ExtraFiles) leaves the mode alone; nginx needs the socket non-blocking.
	f := os.NewFile(uintptr(fd), "listen "+ap.String())
	if err := syscall.SetNonblock(fd, true); err != nil {
		f.Close()
		return nil, fmt.Errorf("listening on %s: %w", ap, err)
	}
	return f, nil
}

// inheritEnv is the NGINX environment variable that hands n sockets,
// passed as ExtraFiles (fds 3, 4, ...), to nginx: "3;4;", as nginx's own
// binary upgrade does.
func inheritEnv(n int) string {
	var b strings.Builder
	b.WriteString("NGINX=")
	for i := range n {
		b.WriteString(strconv.Itoa(3 + i))
		b.WriteByte(';')
	}
	return b.String()
}

func closeAll(files []*os.File) error {
	var errs []error
	for _, f := range files {
		errs = append(errs, f.Close())
	}
	return errors.Join(errs...)
}
