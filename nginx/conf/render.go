// Package conf renders nginx's configuration: the project's nginx.conf and
// the files beside it for a [Site], and the files of sudoku-edge's run
// directory that nginx.conf includes ([RunDirFiles]), one per template in
// templates/: the upstream servers and the concurrency cap, the connection
// and per-client limits, the trusted clients and balancers, the listen, the
// access log and tls.conf. It parses the lists the command takes for them
// ([ParsePrefixes], [ParseListen], [CheckDomain]) and refuses any value that
// would change the meaning of the configuration it is pasted into. It
// writes no file but the Site's and runs nothing.
package conf

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"path"
	"strconv"
	"strings"
	"text/template"
	"time"

	"sudoku-fcgi/nginx/discover"
	"sudoku-fcgi/nginx/logs"
)

//go:embed templates/*.tmpl
var templateFS embed.FS

// RunDirFiles are the files of the run directory that nginx.conf
// includes: X.conf for each template X.conf.tmpl.
func RunDirFiles() []string {
	tmpls, _ := fs.Glob(templateFS, "templates/*.tmpl") // a valid constant pattern
	out := make([]string, len(tmpls))
	for i, p := range tmpls {
		out[i] = strings.TrimSuffix(path.Base(p), ".tmpl")
	}
	return out
}

var templates = template.Must(template.New("").
	Funcs(template.FuncMap{"join": strings.Join, "size": byteSize}).
	ParseFS(templateFS, "templates/*.tmpl"))

// ErrUnsafe reports a value that would change the meaning of the nginx
// configuration it is pasted into.
var ErrUnsafe = errors.New("nginx: unsafe value for configuration")

// Upstream holds the parameters of each worker's `server` line in the
// upstream block. DefaultUpstream is what sudoku-edge runs with.
type Upstream struct {
	// MaxConns is each worker's max_conns: the requests nginx sends one
	// worker at once. Past MaxConns x workers, /sudoku gets 503 before nginx
	// builds a FastCGI request (admission.conf). 0 sets no cap.
	MaxConns int
	// MaxFails is the max_fails of each worker reached over TCP: the failed
	// tries within FailTimeout that take it out of every nginx process for
	// FailTimeout (nginx's passive health check). A host that dies or is
	// cut off is silent, so each try at one of its workers waits out the
	// connect timeout, and both tries of a request can land on its workers
	// until sudoku-edge's round and nginx's reload drop them (over 1 s on a
	// loaded 2-core machine, docker/README.md "The cluster test"); out at
	// the first failed try, they cost no request. A worker on a unix socket
	// refuses at once when it is gone and sudoku-edge drops it within a
	// round, so its max_fails is always 0: there the busy 503s, which nginx
	// counts as failed tries too, would be all it caught (nginx/README.md,
	// "The max_fails trap"). 0 turns the check off over TCP as well.
	MaxFails int
	// FailTimeout is how long MaxFails failed tries take a worker out, in
	// whole seconds: the trap's cost, a burst of busy 503s, lasts that
	// long; a silent worker costs one failed try each FailTimeout until
	// sudoku-edge drops it.
	FailTimeout time.Duration
}

// DefaultUpstream are the measured values (nginx/README.md, "The max_fails
// trap" and "The concurrency cap"): 256 requests at a worker are room for a
// burst, not a wait, and max_fails=1 for 1 s over TCP takes a dead host's
// workers out at their first failed try (docker/README.md, "The cluster
// test") while a busy worker's 503s take it out for no longer than 1 s.
var DefaultUpstream = Upstream{MaxConns: 256, MaxFails: 1, FailTimeout: time.Second}

// Check reports a negative parameter, or a FailTimeout nginx cannot take
// (it counts whole seconds) where MaxFails needs one.
func (u Upstream) Check() error {
	if u.MaxConns < 0 || u.MaxFails < 0 {
		return fmt.Errorf("%w: upstream max_conns %d, max_fails %d: each must be >= 0", ErrUnsafe, u.MaxConns, u.MaxFails)
	}
	if u.MaxFails > 0 && (u.FailTimeout < time.Second || u.FailTimeout%time.Second != 0) {
		return fmt.Errorf("%w: upstream fail_timeout %v: whole seconds, at least 1s, with max_fails %d", ErrUnsafe, u.FailTimeout, u.MaxFails)
	}
	return nil
}

// UpstreamFiles renders the two files that follow the set of workers from
// their templates: servers.conf, the `server` lines of the upstream block,
// and admission.conf, the `limit_conn` line of the /sudoku location. What
// holds for the edge's life (the source, nginx's idle connection pool and
// each server's parameters) is checked once, by NewUpstreamFiles; a
// discovery round then only hands Render the workers and their budget. The
// zero value renders with no source, no pool and no server parameters.
type UpstreamFiles struct {
	source string
	pool   int
	u      Upstream
}

// NewUpstreamFiles checks the settings of the upstream files: source names
// where the addresses come from, for the comment at the top of
// servers.conf; pool is the idle connections nginx keeps in all
// (-keepalive; see shareMaxConns); u is each server's parameters.
func NewUpstreamFiles(source string, pool int, u Upstream) (UpstreamFiles, error) {
	if err := u.Check(); err != nil {
		return UpstreamFiles{}, err
	}
	if strings.ContainsAny(source, "\n\r") {
		return UpstreamFiles{}, fmt.Errorf("%w: source %q has a line break", ErrUnsafe, source)
	}
	return UpstreamFiles{source: source, pool: pool, u: u}, nil
}

// Render renders servers.conf, one `server` line per address in the order
// given (a single `server 127.0.0.1:9 down;` when addrs is empty, so that
// nginx still starts), and admission.conf. Every discover.Addr is safe to
// paste into nginx's configuration as it is (discover.ParseAddr). budget is
// how many workers' share nginx admits (see discover.Budget): while fewer
// answer, each one's max_conns is raised so that together they take what
// budget workers take, within the pool (shareMaxConns). The admission
// limit is the sum of the servers' max_conns, so that nginx turns the
// excess away before it builds a FastCGI request for it (a request over
// every worker's max_conns costs nginx that request, a failed pick of a
// worker and an error-log line); there is none without workers (nginx
// answers "no live upstreams" at once) or with MaxConns 0, where the
// upstream's own checks stay.
func (f UpstreamFiles) Render(addrs []discover.Addr, budget int) (servers, admission []byte, err error) {
	share := shareMaxConns(f.u.MaxConns, len(addrs), budget, f.pool)
	// The templates write each server's parameters: max_fails over TCP
	// only (see Upstream.MaxFails), and max_conns when there is a cap.
	data := struct {
		Source                                          string
		Servers                                         []discover.Addr
		MaxFails, FailTimeout, MaxConns, Workers, Limit int
	}{f.source, addrs, f.u.MaxFails, int(f.u.FailTimeout / time.Second), share, len(addrs), len(addrs) * share}
	var out [2]bytes.Buffer
	for i, name := range []string{"servers.conf", "admission.conf"} {
		if err := templates.ExecuteTemplate(&out[i], name+".tmpl", data); err != nil {
			return nil, nil, fmt.Errorf("rendering %s: %w", name, err)
		}
	}
	return out[0].Bytes(), out[1].Bytes(), nil
}

// shareMaxConns returns the max_conns of each of workers servers so that,
// together, they take what budget servers of maxConns take (rounded up):
// while a worker is missing, the others take its share of the requests in
// flight. The raise stops where the servers together would take more than
// pool, the idle connections nginx keeps (0: no bound): past it, every
// burst opens connections that nginx then closes, and each new one costs a
// worker 64 KiB (net/http/fcgi's record buffer) under its memory limit,
// enough churn to collapse its goodput into garbage collection
// (tests/reliability/HISTORY.md, the budget's entry); a single worker left
// still takes the whole pool. maxConns 0 (no cap), or no fewer workers
// than budget, give maxConns back.
func shareMaxConns(maxConns, workers, budget, pool int) int {
	if maxConns == 0 || workers <= 0 || workers >= budget {
		return maxConns
	}
	raised := (maxConns*budget + workers - 1) / workers
	if pool > 0 {
		raised = min(raised, max(maxConns, (pool+workers-1)/workers))
	}
	return raised
}

// ParsePrefixes parses client addresses and prefixes, the items of a
// list such as "203.0.113.7, 10.0.0.0/8, fd00::/8" (the commands split it,
// with cli.SplitList); a bare address is a prefix of its full length. An
// empty list is valid and trusts nobody.
func ParsePrefixes(items []string) ([]netip.Prefix, error) {
	return parseList(items, parsePrefix)
}

// ParseListen parses nginx listen addresses ("8080", "*:8080",
// "127.0.0.1:28080", "[::]:8080"), the items of a comma-separated list, into
// the socket addresses they bind: a bare port or "*" is every IPv4 address,
// as in nginx. Host names are refused: nginx would resolve them,
// sudoku-edge does not.
func ParseListen(items []string) ([]netip.AddrPort, error) {
	return parseList(items, parseListen)
}

func parseListen(l string) (netip.AddrPort, error) {
	host, port := "", l
	if i := strings.LastIndexByte(l, ':'); i >= 0 {
		host, port = l[:i], l[i+1:]
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return netip.AddrPort{}, fmt.Errorf("listen address %q: port must be 1-65535", l)
	}
	var ip netip.Addr
	switch host {
	case "", "*":
		ip = netip.IPv4Unspecified()
	default:
		if ip, err = netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")); err != nil {
			return netip.AddrPort{}, fmt.Errorf("listen address %q: an IP address or a port, as nginx's listen takes it", l)
		}
		ip = ip.Unmap()
	}
	return netip.AddrPortFrom(ip, uint16(n)), nil
}

// parsePrefix parses one item of ParsePrefixes's list.
func parsePrefix(f string) (netip.Prefix, error) {
	var p netip.Prefix
	var err error
	if strings.Contains(f, "/") {
		p, err = netip.ParsePrefix(f)
	} else {
		var a netip.Addr
		if a, err = netip.ParseAddr(f); err == nil {
			p = netip.PrefixFrom(a, a.BitLen())
		}
	}
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q: want an IP address or a CIDR prefix", f)
	}
	return p.Masked(), nil
}

// byteSize writes n bytes for people: in MiB or KiB when it is a whole
// number of them, else in bytes.
func byteSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// parseList parses each of items with parse and stops at the first error.
func parseList[T any](items []string, parse func(string) (T, error)) ([]T, error) {
	var out []T
	for _, f := range items {
		v, err := parse(f)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// renderTrustedClients renders the entries of nginx.conf's
// geo $sudoku_limit_exempt block: one "prefix 1;" line per trusted
// prefix, whose requests skip the per-client request rate
// limits (a load balancer in front, a monitoring or load-test host).
func renderTrustedClients(prefixes []netip.Prefix) ([]byte, error) {
	var buf bytes.Buffer
	if err := templates.ExecuteTemplate(&buf, "trusted-clients.conf.tmpl", prefixes); err != nil {
		return nil, fmt.Errorf("rendering trusted-clients.conf: %w", err)
	}
	return buf.Bytes(), nil
}

// renderRealIP renders real-ip.conf, included at http level: the
// balancers whose X-Forwarded-For, or with proxyProtocol whose PROXY
// protocol header, nginx believes (ngx_http_realip_module).
func renderRealIP(from []netip.Prefix, proxyProtocol bool) ([]byte, error) {
	var buf bytes.Buffer
	err := templates.ExecuteTemplate(&buf, "real-ip.conf.tmpl", struct {
		From          []netip.Prefix
		ProxyProtocol bool
	}{from, proxyProtocol})
	if err != nil {
		return nil, fmt.Errorf("rendering real-ip.conf: %w", err)
	}
	return buf.Bytes(), nil
}

// renderAccessLog renders access-log.conf, included at http level: the
// log lines nginx sends to the AccessLog's socket, none without a Path.
func renderAccessLog(a *logs.AccessLog) ([]byte, error) {
	if strings.ContainsAny(a.Path, ";{}#\"'\\\n\r$ \t,") {
		return nil, fmt.Errorf("access log socket path %q: a character nginx would misread", a.Path)
	}
	var buf bytes.Buffer
	err := templates.ExecuteTemplate(&buf, "access-log.conf.tmpl", struct {
		Path, Format string
		All          bool
		SampleEvery  int
	}{a.Path, logs.Format, a.All, logs.SampleEvery})
	if err != nil {
		return nil, fmt.Errorf("rendering access-log.conf: %w", err)
	}
	return buf.Bytes(), nil
}

// renderListen renders listen.conf, the plain HTTP server's listen
// directive in nginx.conf: listen (ParseListen's form), with the PROXY
// protocol when proxyProtocol is set; comments only for an empty listen.
func renderListen(listen string, proxyProtocol bool) ([]byte, error) {
	if listen != "" {
		if _, err := parseListen(listen); err != nil {
			return nil, err
		}
	}
	var buf bytes.Buffer
	err := templates.ExecuteTemplate(&buf, "listen.conf.tmpl", struct {
		Listen        string
		ProxyProtocol bool
	}{listen, proxyProtocol})
	if err != nil {
		return nil, fmt.Errorf("rendering listen.conf: %w", err)
	}
	return buf.Bytes(), nil
}

// ProcessLimits are nginx's connection limits for all its worker
// processes together. nginx applies worker_connections and an upstream's
// keepalive per worker process, so each process gets its share, and the
// totals stay the same whatever -worker-processes is.
type ProcessLimits struct {
	Connections int // client and upstream connections open at once
	Keepalive   int // idle connections to the workers kept for reuse
}

// DefaultProcessLimits are the totals of the compose stack, 2 processes of
// 4,096 connections and 256 idle upstream connections (nginx/README.md,
// "Keep-alive").
var DefaultProcessLimits = ProcessLimits{Connections: 8192, Keepalive: 512}

// share is one process's share of total among processes, rounded up:
// processes < 1 (nginx.conf's own count) get the total each.
type share struct{ Total, Processes, PerProcess int }

func shareOf(total, processes int) share {
	per := total
	if processes > 1 {
		per = (total + processes - 1) / processes
	}
	return share{total, processes, max(per, 1)}
}

// renderProcessLimits renders events.conf (worker_connections, in the
// events block) and keepalive.conf (keepalive, in the upstream block) for
// processes nginx worker processes.
func renderProcessLimits(l ProcessLimits, processes int) (events, keepalive []byte, err error) {
	if l.Connections < 1 || l.Keepalive < 1 {
		return nil, nil, fmt.Errorf("nginx: connection limits %+v: each must be at least 1", l)
	}
	var e, k bytes.Buffer
	if err := templates.ExecuteTemplate(&e, "events.conf.tmpl", shareOf(l.Connections, processes)); err != nil {
		return nil, nil, fmt.Errorf("rendering events.conf: %w", err)
	}
	if err := templates.ExecuteTemplate(&k, "keepalive.conf.tmpl", shareOf(l.Keepalive, processes)); err != nil {
		return nil, nil, fmt.Errorf("rendering keepalive.conf: %w", err)
	}
	return e.Bytes(), k.Bytes(), nil
}

// TLSSite is one HTTPS server: a name and its certificate pair.
type TLSSite struct {
	Name     string // server_name, also the certificate's name
	CertFile string // full chain, PEM
	KeyFile  string // private key, PEM
}

// TLSServer describes the HTTPS servers that RenderTLS writes. With no
// Sites, TLS is off and the rendered file has comments only.
type TLSServer struct {
	Sites []TLSSite // the first one is the default server for clients without SNI
	CA    string    // ACME directory, for the comment only

	HTTPSListen string // nginx listen for HTTPS, e.g. "8443"
	Locations   string // file with the public locations, shared with the HTTP server

	HSTS       bool // send Strict-Transport-Security
	HSTSMaxAge int  // seconds

	ProxyProtocol bool // every listen takes the PROXY protocol (Supervisor.ProxyProtocol)

	// Redirect adds a plain-HTTP server for the sites' names on HTTPListen
	// that proxies ACME challenges to ChallengeAddr and answers everything
	// else with a 308 to https://$host[:RedirectPort].
	Redirect      bool
	HTTPListen    string // e.g. "8080"
	ChallengeAddr string // e.g. "127.0.0.1:8081"
	RedirectPort  int    // public HTTPS port; 443 or 0 leaves it out of the URL
}

// RedirectPortSuffix is ":port" for the redirect target, or empty for 443.
func (s TLSServer) RedirectPortSuffix() string {
	if s.RedirectPort == 0 || s.RedirectPort == 443 {
		return ""
	}
	return ":" + strconv.Itoa(s.RedirectPort)
}

// RenderTLS renders tls.conf, included by nginx.conf at http level.
func RenderTLS(s TLSServer) ([]byte, error) {
	values := map[string]string{
		"locations file": s.Locations, "CA": s.CA, "HTTPS listen": s.HTTPSListen,
		"HTTP listen": s.HTTPListen, "challenge address": s.ChallengeAddr,
	}
	for _, site := range s.Sites {
		values["server name "+site.Name] = site.Name
		values["certificate file "+site.CertFile] = site.CertFile
		values["key file "+site.KeyFile] = site.KeyFile
	}
	for name, v := range values {
		if strings.ContainsAny(v, ";{}#\"'\\\n\r$ \t") {
			return nil, fmt.Errorf("%w: %s %q", ErrUnsafe, name, v)
		}
	}
	var buf bytes.Buffer
	if err := templates.ExecuteTemplate(&buf, "tls.conf.tmpl", s); err != nil {
		return nil, fmt.Errorf("rendering tls.conf: %w", err)
	}
	return buf.Bytes(), nil
}

// CheckDomain reports whether d is a DNS name fit for server_name, a file
// name and an HTTP-01 order: letters, digits, hyphens and dots, no
// wildcard (HTTP-01 cannot validate one).
func CheckDomain(d string) error {
	name := d
	if name == "" || len(name) > 253 {
		return fmt.Errorf("%w: domain %q: empty or too long", ErrUnsafe, d)
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return fmt.Errorf("%w: domain %q: bad label %q", ErrUnsafe, d, label)
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return fmt.Errorf("%w: domain %q: unexpected %q", ErrUnsafe, d, c)
			}
		}
	}
	return nil
}
