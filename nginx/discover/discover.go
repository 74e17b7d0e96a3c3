// Package discover finds the workers behind sudoku-edge's -workers targets:
// it resolves host:port names and lists unix:<glob> sockets, leaves out the
// addresses that refuse a connection, and keeps the budget of workers whose
// share of requests nginx admits ([Budget]). [Discovery.Next] does all of it
// in one round and returns the set against the previous one. It knows
// nothing of nginx's files or process.
package discover

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"sudoku-fcgi/cmd/contract"
)

// Addr is a worker's address: an IP address and port, or the path of a
// unix socket. It is comparable, so it keys maps and compares with ==.
type Addr struct {
	ip   netip.AddrPort
	path string // unix socket; empty for TCP
}

// TCPAddr is the worker address ap.
func TCPAddr(ap netip.AddrPort) Addr { return Addr{ip: ap} }

// ParseAddr parses a worker address as String writes it: "ip:port", or
// "unix:<path>" for a socket path nginx can take as it is and whose name
// keeps the contract's rule (SafeSocketPath). Every unix Addr passes that
// check, so nginx's configuration can take any Addr as it is.
func ParseAddr(s string) (Addr, error) {
	if path, ok := strings.CutPrefix(s, unixPrefix); ok {
		if !filepath.IsAbs(path) || !SafeSocketPath(path) {
			return Addr{}, fmt.Errorf("worker address %q: not an absolute socket path nginx can take", s)
		}
		return Addr{path: path}, nil
	}
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return Addr{}, fmt.Errorf("worker address %q: %w", s, err)
	}
	return Addr{ip: ap}, nil
}

// Path is the unix socket's path, or empty for a TCP address.
func (a Addr) Path() string { return a.path }

// Network is "unix" for a socket path, "tcp" otherwise, as net.Dial takes it.
func (a Addr) Network() string {
	if a.path != "" {
		return "unix"
	}
	return "tcp"
}

// String is the address as nginx's server directive takes it:
// "172.18.0.3:9000", "[fd00::1]:9000" or "unix:/run/sudoku-fcgi/a.sock".
func (a Addr) String() string {
	if a.path != "" {
		return "unix:" + a.path
	}
	return a.ip.String()
}

// dialAddress is the address as net.Dial takes it with Network.
func (a Addr) dialAddress() string {
	if a.path != "" {
		return a.path
	}
	return a.ip.String()
}

// Compare orders TCP addresses first, as netip.AddrPort.Compare does, then
// socket paths by name.
func (a Addr) Compare(b Addr) int {
	switch {
	case a.path == "" && b.path == "":
		return a.ip.Compare(b.ip)
	case a.path == "":
		return -1
	case b.path == "":
		return 1
	}
	return strings.Compare(a.path, b.path)
}

// Resolver looks a host name up, as *net.Resolver does. It MUST honour ctx.
type Resolver interface {
	LookupHost(ctx context.Context, host string) ([]string, error)
}

var _ Resolver = (*net.Resolver)(nil)

// Discovery finds the addresses behind a list of targets: host:port, whose
// name is resolved, or unix:<glob>, whose matching socket files are listed.
type Discovery struct {
	Targets  []Target // from ParseTargets
	Resolver Resolver // nil means net.DefaultResolver
	Timeout  time.Duration
	// DropRefusing leaves out the addresses that refuse a connection or
	// stay silent: a worker that drains closes its listener at once, but
	// its name resolves until its process exits, and then its address
	// vanishes, so nginx's connects to it hang until
	// fastcgi_connect_timeout. Dropped on the refusal, it leaves the
	// upstream while it still answers "refused" at once. A connect that
	// times out drops a TCP address too when another address accepted in
	// the same round: the kernel completes a handshake for a live process,
	// however busy or stopped, so silence is a host that died or was cut
	// off (its name resolves until the orchestrator notices: seconds on
	// Swarm, tests/swarm/cluster.sh); a socket file that fails otherwise
	// than by refusing has a full backlog, a busy worker, and is kept.
	// When every connect times out the stall is more likely this process's
	// own, and only the addresses dropped before stay out; an address that
	// refused stays out through timeouts too (the name of a stopped
	// container may resolve for a while after its address is gone). A
	// dropped address is back on its first accept. A socket file that
	// refuses (left by a killed worker) or has gone since the listing counts
	// as refusing.
	DropRefusing bool
	// Budget is how many workers' share nginx admits, kept by Next; set
	// its Hold.
	Budget Budget

	// dropped holds the addresses left out and not accepted since; probe
	// replaces the connect in tests.
	dropped map[Addr]bool
	probe   func(ctx context.Context, a Addr) error
}

// probeTimeout bounds one DropRefusing connect.
const probeTimeout = 300 * time.Millisecond

// unixPrefix starts a target that lists socket files.
const unixPrefix = "unix:"

// Target is one parsed worker target: a host name or IP address with a
// port, to resolve, or an absolute glob of unix sockets, to list.
type Target struct {
	host    string
	port    uint16
	pattern string // unix:<pattern>; empty for host:port
}

// String is the target as it was written: "sudoku:9000" or "unix:/run/x/*.sock".
func (t Target) String() string {
	if t.pattern != "" {
		return unixPrefix + t.pattern
	}
	return net.JoinHostPort(t.host, strconv.Itoa(int(t.port)))
}

// ParseTargets parses and checks worker targets, the items of a
// comma-separated list: host:port or unix:<glob> (an absolute
// filepath.Match pattern). None is an error.
func ParseTargets(items []string) ([]Target, error) {
	var out []Target
	for _, item := range items {
		t, err := parseTarget(item)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	if len(out) == 0 {
		return nil, errors.New("no worker target given")
	}
	return out, nil
}

// parseTarget parses one item of ParseTargets's list.
func parseTarget(t string) (Target, error) {
	if pattern, ok := strings.CutPrefix(t, unixPrefix); ok {
		if err := checkSocketPattern(pattern); err != nil {
			return Target{}, fmt.Errorf("worker target %q: %w", t, err)
		}
		return Target{pattern: pattern}, nil
	}
	host, port, err := net.SplitHostPort(t)
	if err != nil {
		return Target{}, fmt.Errorf("worker target %q: %w", t, err)
	}
	if host == "" {
		return Target{}, fmt.Errorf("worker target %q: empty host", t)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return Target{}, fmt.Errorf("worker target %q: port must be 1-65535", t)
	}
	return Target{host: host, port: uint16(n)}, nil
}

// JoinTargets writes targets back as the comma-separated list they came from.
func JoinTargets(targets []Target) string {
	s := make([]string, len(targets))
	for i, t := range targets {
		s[i] = t.String()
	}
	return strings.Join(s, ",")
}

// checkSocketPattern accepts an absolute glob whose matches nginx can take
// as a server address.
func checkSocketPattern(pattern string) error {
	if !filepath.IsAbs(pattern) {
		return errors.New("the socket pattern must be an absolute path")
	}
	if _, err := filepath.Match(pattern, ""); err != nil {
		return err
	}
	if strings.ContainsAny(pattern, nginxUnsafe) {
		return errors.New("the socket pattern has a character nginx would misread")
	}
	return nil
}

// nginxUnsafe are the characters nginx would misread in a path pasted into
// its configuration as it is: they end the directive, quote, open a block,
// start a comment or a variable, or separate arguments.
const nginxUnsafe = ";{}#\"'\\$ \t\n\r"

// SafeSocketPath reports whether path can follow "server unix:" in nginx's
// configuration as it is and names a socket a worker makes: a directory
// without a character of nginxUnsafe, and a file name by the contract's
// rule (contract.SocketName).
func SafeSocketPath(path string) bool {
	dir, name := filepath.Split(path)
	return !strings.ContainsAny(dir, nginxUnsafe) && contract.SocketName(name)
}

// listSockets returns the unix sockets among the files matching pattern.
// Other files, and names the contract's rule refuses (see SafeSocketPath),
// are left out; a missing directory matches nothing.
func listSockets(pattern string) ([]Addr, error) {
	paths, err := filepath.Glob(pattern)
	if err != nil {
		return nil, err
	}
	var out []Addr
	for _, p := range paths {
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode().Type() != fs.ModeSocket || !SafeSocketPath(p) {
			continue // gone since the listing, not a socket, or unfit for nginx
		}
		out = append(out, Addr{path: p})
	}
	return out, nil
}

// Workers is what one round of Next found: the worker set, what changed
// since the previous one, and the budget for it.
type Workers struct {
	Addrs          []Addr // sorted, as Resolve returns them
	Added, Removed []Addr // against the previous set
	Budget         int    // Budget.Update's
	// Lowered reports that the budget fell: the missing workers' Hold
	// has run out, so nginx needs new files even for the same set.
	Lowered bool
}

// Next resolves the workers (Resolve) and returns them against prev, the
// set nginx has now, with the budget updated for them. A failed lookup
// returns its error with prev as the set, so that a DNS hiccup never
// empties the upstream. When ctx ends during the lookup it returns ctx's
// error and leaves the budget as it was. It is not safe for concurrent use.
func (d *Discovery) Next(ctx context.Context, prev []Addr) (Workers, error) {
	next, err := d.Resolve(ctx)
	if ctx.Err() != nil {
		return Workers{Addrs: prev}, ctx.Err()
	}
	if err != nil {
		next = prev
	}
	w := Workers{Addrs: next}
	w.Budget, w.Lowered = d.Budget.Update(len(next), time.Now())
	for _, a := range next {
		if _, found := slices.BinarySearchFunc(prev, a, Addr.Compare); !found {
			w.Added = append(w.Added, a)
		}
	}
	for _, a := range prev {
		if _, found := slices.BinarySearchFunc(next, a, Addr.Compare); !found {
			w.Removed = append(w.Removed, a)
		}
	}
	return w, err
}

// Resolve returns the sorted, de-duplicated addresses of all targets. A name
// that does not exist (every replica gone) contributes no address and no
// error; any other lookup failure is an error, so that a DNS hiccup never
// empties the upstream: callers keep the previous set. A unix:<glob>
// target contributes the socket files it matches now. With DropRefusing it
// then probes each address, and is not safe for concurrent use.
func (d *Discovery) Resolve(ctx context.Context) ([]Addr, error) {
	r := d.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	if d.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.Timeout)
		defer cancel()
	}
	var out []Addr
	for _, t := range d.Targets {
		if t.pattern != "" {
			socks, err := listSockets(t.pattern)
			if err != nil {
				return nil, fmt.Errorf("worker target %q: %w", t, err)
			}
			out = append(out, socks...)
			continue
		}
		host, port := t.host, t.port
		if ip, err := netip.ParseAddr(host); err == nil {
			out = append(out, Addr{ip: netip.AddrPortFrom(ip.Unmap(), port)})
			continue
		}
		hosts, err := r.LookupHost(ctx, host)
		if dnsErr, ok := errors.AsType[*net.DNSError](err); ok && dnsErr.IsNotFound {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("resolving %s: %w", host, err)
		}
		for _, h := range hosts {
			ip, err := netip.ParseAddr(h)
			if err != nil {
				return nil, fmt.Errorf("resolving %s: bad address %q", host, h)
			}
			out = append(out, Addr{ip: netip.AddrPortFrom(ip.Unmap(), port)})
		}
	}
	slices.SortFunc(out, Addr.Compare)
	out = slices.Compact(out)
	if d.DropRefusing {
		out = d.dropRefusing(ctx, out)
	}
	return out, nil
}

// dropRefusing connects to every address at once and returns those that
// accepted, and those that timed out while none accepted, unless they were
// dropped before. It is not safe for concurrent use.
func (d *Discovery) dropRefusing(ctx context.Context, addrs []Addr) []Addr {
	type outcome int
	const (
		accepted outcome = iota
		refused
		unknown
	)
	probe := d.probe
	if probe == nil {
		probe = connect
	}
	got := make([]outcome, len(addrs))
	var wg sync.WaitGroup
	for i, a := range addrs {
		wg.Go(func() {
			err := probe(ctx, a)
			switch {
			case err == nil:
				got[i] = accepted
			case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ENOENT):
				got[i] = refused
			default:
				got[i] = unknown
			}
		})
	}
	wg.Wait()
	anyAccepted := slices.Contains(got, accepted)
	next := map[Addr]bool{}
	kept := addrs[:0]
	for i, a := range addrs {
		switch {
		case got[i] == refused, got[i] == unknown && (d.dropped[a] || anyAccepted && a.path == ""):
			next[a] = true
		default:
			kept = append(kept, a)
		}
	}
	d.dropped = next
	return kept
}

// connect opens a connection to a and closes it.
func connect(ctx context.Context, a Addr) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	var dialer net.Dialer
	c, err := dialer.DialContext(ctx, a.Network(), a.dialAddress())
	if err == nil {
		c.Close()
	}
	return err
}

// Strings writes addrs as nginx's server directive takes them, for logs.
func Strings(addrs []Addr) []string {
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = a.String()
	}
	return out
}

// Budget is how many workers' share of requests nginx admits at once (see
// conf.UpstreamFiles.Render). It is the most workers seen, so that while some are
// missing (a restart, a crash) the others take their share. Once fewer have
// answered for Hold, the missing ones count as gone (a scale-down, a worker
// that never came back) and the budget falls to the workers there are.
// The zero Hold never lets the budget fall.
type Budget struct {
	Hold time.Duration

	most  int
	short time.Time // since when fewer than most have answered; zero if none missing
}

// Update records that n workers answer at now and returns the budget, and
// whether it fell: fewer than the budget have answered for Hold or longer.
func (b *Budget) Update(n int, now time.Time) (budget int, lowered bool) {
	lowered = n < b.most && !b.short.IsZero() && b.Hold > 0 && now.Sub(b.short) >= b.Hold
	switch {
	case n >= b.most, lowered:
		b.most, b.short = n, time.Time{}
	case b.short.IsZero():
		b.short = now
	}
	return b.most, lowered
}
