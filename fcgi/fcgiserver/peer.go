package fcgiserver

import (
	"net"
	"net/netip"
	"strconv"
	"syscall"
)

// peer names the other end of a FastCGI connection for MaxConnsPerPeer:
// its IP address over TCP, its user id over a unix socket (where the
// kernel tells it: every process of one nginx runs as one user, as every
// connection of one host comes from one address). The zero peer is not
// counted.
type peer struct {
	ip   netip.Addr
	uid  uint32
	unix bool
}

// peerOf returns c's peer; the zero peer when it cannot be told.
func peerOf(c net.Conn) peer {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return peer{ip: a.AddrPort().Addr().Unmap()}
	}
	if sc, ok := c.(syscall.Conn); ok && c.LocalAddr().Network() == "unix" {
		if uid, ok := peerUID(sc); ok {
			return peer{uid: uid, unix: true}
		}
	}
	return peer{}
}

func (p peer) valid() bool { return p.ip.IsValid() || p.unix }

func (p peer) String() string {
	if p.unix {
		return "uid " + strconv.FormatUint(uint64(p.uid), 10)
	}
	return p.ip.String()
}
