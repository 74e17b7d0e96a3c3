package nginx

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Resolver looks a host name up, as *net.Resolver does. It MUST honour ctx.
type Resolver interface {
	LookupHost(ctx context.Context, host string) ([]string, error)
}

var _ Resolver = (*net.Resolver)(nil)

// Discovery finds the addresses behind a list of host:port targets.
type Discovery struct {
	Targets  []string // "sudoku:9000", "127.0.0.1:19000", ...
	Resolver Resolver // nil means net.DefaultResolver
	Timeout  time.Duration
	// DropRefusing leaves out the addresses that refuse a TCP connection:
	// a worker that drains closes its listener at once, but its name
	// resolves until its process exits, and then its address vanishes, so
	// nginx's connects to it hang until fastcgi_connect_timeout. Dropped
	// on the refusal, it leaves the upstream while it still answers
	// "refused" at once. A connect that times out keeps the address (a
	// busy worker's full backlog looks the same), unless the address
	// refused before and has not accepted since: the name of a stopped
	// container may resolve for a while after its address is gone.
	DropRefusing bool

	// refused holds the addresses dropped for refusing and not accepted
	// since; probe replaces the TCP connect in tests.
	refused map[netip.AddrPort]bool
	probe   func(ctx context.Context, a netip.AddrPort) error
}

// probeTimeout bounds one DropRefusing connect.
const probeTimeout = 300 * time.Millisecond

// ParseTargets splits a comma-separated list of host:port targets and
// checks each one.
func ParseTargets(s string) ([]string, error) {
	var out []string
	for _, t := range strings.Split(s, ",") {
		t = strings.TrimSpace(t)
		if t == "" {
			continue
		}
		host, port, err := net.SplitHostPort(t)
		if err != nil {
			return nil, fmt.Errorf("worker target %q: %w", t, err)
		}
		if host == "" {
			return nil, fmt.Errorf("worker target %q: empty host", t)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("worker target %q: port must be 1-65535", t)
		}
		out = append(out, t)
	}
	if len(out) == 0 {
		return nil, errors.New("no worker target given")
	}
	return out, nil
}

// Resolve returns the sorted, de-duplicated addresses of all targets. A name
// that does not exist (every replica gone) contributes no address and no
// error; any other lookup failure is an error, so that a DNS hiccup never
// empties the upstream: callers keep the previous set. With DropRefusing it
// then probes each address, and is not safe for concurrent use.
func (d *Discovery) Resolve(ctx context.Context) ([]netip.AddrPort, error) {
	r := d.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	if d.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.Timeout)
		defer cancel()
	}
	var out []netip.AddrPort
	for _, t := range d.Targets {
		host, portStr, err := net.SplitHostPort(t)
		if err != nil {
			return nil, fmt.Errorf("worker target %q: %w", t, err)
		}
		port, err := strconv.ParseUint(portStr, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("worker target %q: %w", t, err)
		}
		if ip, err := netip.ParseAddr(host); err == nil {
			out = append(out, netip.AddrPortFrom(ip.Unmap(), uint16(port)))
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
			out = append(out, netip.AddrPortFrom(ip.Unmap(), uint16(port)))
		}
	}
	slices.SortFunc(out, func(a, b netip.AddrPort) int { return a.Compare(b) })
	out = slices.Compact(out)
	if d.DropRefusing {
		out = d.dropRefusing(ctx, out)
	}
	return out, nil
}

// dropRefusing connects to every address at once and returns those that
// accepted, and those that timed out without having refused before. It is
// not safe for concurrent use.
func (d *Discovery) dropRefusing(ctx context.Context, addrs []netip.AddrPort) []netip.AddrPort {
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
			case errors.Is(err, syscall.ECONNREFUSED):
				got[i] = refused
			default:
				got[i] = unknown
			}
		})
	}
	wg.Wait()
	next := map[netip.AddrPort]bool{}
	kept := addrs[:0]
	for i, a := range addrs {
		switch {
		case got[i] == refused, got[i] == unknown && d.refused[a]:
			next[a] = true
		default:
			kept = append(kept, a)
		}
	}
	d.refused = next
	return kept
}

// connect opens a TCP connection to a and closes it.
func connect(ctx context.Context, a netip.AddrPort) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	var dialer net.Dialer
	c, err := dialer.DialContext(ctx, "tcp", a.String())
	if err == nil {
		c.Close()
	}
	return err
}

// Diff returns the addresses only in next (added) and only in prev
// (removed). Both inputs must be sorted.
func Diff(prev, next []netip.AddrPort) (added, removed []netip.AddrPort) {
	for _, a := range next {
		if _, found := slices.BinarySearchFunc(prev, a, netip.AddrPort.Compare); !found {
			added = append(added, a)
		}
	}
	for _, a := range prev {
		if _, found := slices.BinarySearchFunc(next, a, netip.AddrPort.Compare); !found {
			removed = append(removed, a)
		}
	}
	return added, removed
}

// Watch resolves every interval until ctx ends and calls onChange with the
// new set whenever it differs from the last one passed (the first call
// compares against last). Lookup errors go to onError and keep the set.
func (d *Discovery) Watch(ctx context.Context, interval time.Duration, last []netip.AddrPort,
	onChange func(ctx context.Context, addrs []netip.AddrPort), onError func(error)) {
	every(ctx, interval, func() {
		addrs, err := d.Resolve(ctx)
		if err != nil {
			if ctx.Err() == nil && onError != nil {
				onError(err)
			}
			return
		}
		if !slices.Equal(addrs, last) {
			onChange(ctx, addrs)
			last = addrs
		}
	})
}
