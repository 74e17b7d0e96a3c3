package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/certmagic"
	"github.com/rs/zerolog"

	"sudoku-fcgi/cmd/cli"
	"sudoku-fcgi/cmd/contract"
	"sudoku-fcgi/nginx"
	"sudoku-fcgi/nginx/conf"
	"sudoku-fcgi/nginx/discover"
	"sudoku-fcgi/nginx/edgetls"
	"sudoku-fcgi/nginx/logs"
)

const summary = `Runs nginx in the foreground, keeps its upstream in step with the worker
addresses and, when domains are given, its TLS certificates with ACME. It
serves its own metrics on -metrics-listen, which nginx never exposes.`

// config is the command line: the supervisor's fields, set by the flags,
// and what run wires around it.
type config struct {
	sup        nginx.Supervisor
	renderOnly string // a directory: write the includes there and exit
	renderConf string // a directory: write nginx.conf and the files beside it there and exit
	site       conf.Site
	logLevel   string
	// holdSockets makes sudoku-edge open nginx's listening sockets
	// (heldSockets) and hand them to nginx.
	holdSockets bool
	// metricsListen is the address of the internal listener that serves
	// /metrics; empty turns it off.
	metricsListen string
	level         zerolog.Level // parsed from logLevel by check
	tls           tlsFlags
	accessLog     logs.AccessLog // its Path relative to the run directory until parseConfig ends
}

func parseConfig(args []string, lookupEnv func(string) (string, bool), stdout io.Writer) (*config, error) {
	c := &config{}
	s := &c.sup
	s.Config = nginx.DefaultConfig()
	cfg := &s.Config
	fs := cli.NewFlagSet(name, summary, stdout)
	fs.Var(targetsFlag{&cfg.Workers}, "workers", "worker `targets`, comma-separated: host:port to resolve, or unix:<glob> to list the unix sockets that match, e.g. unix:/run/sudoku-fcgi/*.sock")
	fs.Var(positiveDuration{&cfg.ResolveInterval}, "resolve-interval", "`duration` between two lookups of the workers (nginx failing to connect to one brings the next forward)")
	fs.Var(positiveDuration{&cfg.BudgetHold}, "budget-hold", "`duration` for which the workers left take a missing worker's share of the requests in flight before it counts as gone (a restart or crash is shorter, a scale-down longer)")
	fs.IntVar(&cfg.Upstream.MaxConns, "max-conns-per-worker", cfg.Upstream.MaxConns, "requests nginx sends one worker at once (the upstream's max_conns); past `count` x the workers /sudoku gets 503 at once, and while a worker is missing the others take its share; 0 sets no cap")
	fs.IntVar(&cfg.Upstream.MaxFails, "max-fails", cfg.Upstream.MaxFails, "nginx's max_fails of each worker reached over TCP: failed `tries` within -fail-timeout that take it out of every nginx process for -fail-timeout, so a host that dies or is cut off costs no request its two tries; 0 turns it off; workers on unix sockets always get 0 (nginx/README.md, \"The max_fails trap\")")
	fs.Var(positiveDuration{&cfg.Upstream.FailTimeout}, "fail-timeout", "nginx's fail_timeout of each worker reached over TCP, whole seconds: how long -max-fails failed tries (a busy worker's 503s among them) take it out")
	cl := &cfg.Clients
	fs.IntVar(&cl.Rate, "client-rate", cl.Rate, "requests a `second` nginx takes from one client address, GET and POST together; past it and -client-burst, 429 at once")
	fs.IntVar(&cl.Burst, "client-burst", cl.Burst, "requests above -client-rate that one client may send at once, never delayed (`count`)")
	fs.IntVar(&cl.InFlight, "client-in-flight", cl.InFlight, "requests of one client at once (`count`); past it 429 on /sudoku/stats, 503 on /sudoku (nginx/README.md, \"429 or 503\")")
	fs.IntVar(&cl.BatchRate, "batch-rate", cl.BatchRate, "batch POSTs a `second` from one client (within -client-rate)")
	fs.IntVar(&cl.BatchBurst, "batch-burst", cl.BatchBurst, "batch POSTs above -batch-rate that one client may send at once (`count`)")
	fs.IntVar(&cl.BatchInFlight, "batch-in-flight", cl.BatchInFlight, "batch POSTs of one client at once (`count`)")
	fs.IntVar(&cl.BatchBodies, "batch-bodies", cl.BatchBodies, "batch POSTs at once for all clients together (`count`): nginx holds each body in memory, up to -max-body")
	fs.Int64Var(&cl.MaxBody, "max-body", cl.MaxBody, "largest batch body in `bytes` (413 past it), held in memory; at most the worker's -max-body")
	var trusted, realIP string
	fs.StringVar(&realIP, "real-ip-from", "", "comma-separated `addresses or prefixes` of the load balancers in front of nginx: from them, X-Forwarded-For names the client that the per-client limits count (the last address not of a balancer); from anyone else the header is ignored")
	fs.BoolVar(&cfg.ProxyProtocol, "proxy-protocol", cfg.ProxyProtocol, "nginx's public listens take the PROXY protocol (v1 or v2) and the client's address comes from its header when the peer is one of -real-ip-from, which must name the balancers that send it (every connection must start with the header); off, X-Forwarded-For from -real-ip-from names the client")
	fs.BoolVar(&c.holdSockets, "hold-sockets", true, "open the sockets of -http-listen, -status-listen and, with TLS, -tls-listen in sudoku-edge and hand them to every nginx it starts, so that a restarted nginx refuses no connection; false leaves nginx to bind its own")
	fs.StringVar(&trusted, "trusted-clients", "", "comma-separated client `addresses or prefixes` exempt from the per-client limits (a load balancer in front, a load-test host)")
	fs.StringVar(&c.renderOnly, "render-only", "", "write the files nginx.conf includes into `directory` (those of -run-dir; servers.conf from the -workers targets as given), as at start, and exit without starting nginx: the host stack (nginx/render-host.sh)")
	fs.StringVar(&c.renderConf, "render-conf", "", "write nginx.conf, sudoku-locations.conf, sudoku-fastcgi.conf, sudoku-www.conf and sudoku-guard.conf into `directory`, naming -run-dir, -www-root, -status-listen, -challenge-listen and -nginx-temp-dir, and exit (after -render-only, when both are given): the image's /etc/nginx and the host stack")
	fs.StringVar(&c.site.WWWRoot, "www-root", "/usr/share/sudoku-www", "`directory` of the web page's files, for -render-conf")
	fs.StringVar(&c.site.StatusListen, "status-listen", "8082", "nginx listen `address` of stub_status, for -render-conf and -hold-sockets (the same as nginx.conf was rendered with)")
	fs.StringVar(&c.site.TempDir, "nginx-temp-dir", "", "`directory` for nginx's temporary files, for -render-conf (empty: nginx's built-in paths)")
	c.site.ReadTimeout, c.site.BatchReadTimeout = contract.ReadTimeout, contract.BatchReadTimeout
	fs.Var(positiveDuration{&c.site.ReadTimeout}, "read-timeout", "nginx's fastcgi_read_timeout of a GET, for -render-conf: the `duration` after which a silent worker counts as hung and the GET goes to another; above the worker's -queue-timeout + -solve-timeout")
	fs.Var(positiveDuration{&c.site.BatchReadTimeout}, "batch-read-timeout", "nginx's fastcgi_read_timeout of a batch POST, for -render-conf: a `duration` above the worker's -batch-timeout")
	fs.StringVar(&cfg.RunDir, "run-dir", cfg.RunDir, "`directory` for the files nginx.conf includes (one per template in nginx/conf/templates) and exported certificates")
	fs.StringVar(&cfg.Bin, "nginx", cfg.Bin, "nginx `binary`")
	fs.StringVar(&cfg.Conf, "nginx-conf", cfg.Conf, "nginx configuration `file` (-c)")
	fs.IntVar(&cfg.WorkerProcesses, "worker-processes", cfg.WorkerProcesses, "nginx worker_processes `count`: the default is the CPUs this process may use (its cgroup CPU quota and affinity, as GOMAXPROCS); 0 leaves it to nginx.conf")
	fs.IntVar(&cfg.Limits.Connections, "worker-connections", cfg.Limits.Connections, "nginx connections open at once (clients and workers) for all worker processes together: each gets its share as worker_connections")
	fs.IntVar(&cfg.Limits.Keepalive, "keepalive", cfg.Limits.Keepalive, "idle connections to the workers that nginx keeps for reuse, for all worker processes together: each gets its share as the upstream's keepalive")
	fs.StringVar(&cfg.Prefix, "nginx-prefix", cfg.Prefix, "nginx prefix `directory` (-p); empty keeps nginx's default")
	fs.StringVar(&cfg.ChallengeListen, "challenge-listen", cfg.ChallengeListen, "`address` of the ACME HTTP-01 challenge responder (nginx proxies /.well-known/acme-challenge/ here)")
	fs.StringVar(&c.metricsListen, "metrics-listen", ":9145", "internal `address` serving /metrics (build info, discovery, reloads); empty turns it off")
	fs.StringVar(&c.logLevel, "log-level", "info", "log `level`: debug, info, warn, error")
	o := &c.tls.o
	fs.Var(listFlag{&c.tls.domains}, "tls-domains", "comma-separated `names` to serve over HTTPS with ACME certificates; empty turns TLS off")
	fs.StringVar(&o.Email, "tls-email", "", "ACME account contact `address` (expiry notices)")
	fs.StringVar(&o.CA, "tls-ca", certmagic.LetsEncryptProductionCA, "ACME directory `URL` (Let's Encrypt staging: "+certmagic.LetsEncryptStagingCA+")")
	fs.StringVar(&c.tls.caRoot, "tls-ca-root", "", "PEM `file` with an extra root to trust for the ACME server's own TLS (test CAs such as Pebble)")
	fs.StringVar(&o.StoragePath, "tls-storage", "/var/lib/sudoku-edge/acme", "certmagic storage `directory` (accounts, keys, certificates); put it on a volume")
	fs.BoolVar(&c.tls.storageShared, "tls-storage-shared", false, "every edge mounts the same -tls-storage (a network filesystem): one orders each certificate under certmagic's lock there, the others load it; needed for TLS with -replicas above 1")
	fs.IntVar(&c.tls.replicas, "replicas", 1, "how many sudoku-edge replicas serve the site (docker/stack.yml passes its SUDOKU_EDGE_REPLICAS); with TLS, more than 1 needs -tls-storage-shared")
	fs.StringVar(&o.CertDir, "tls-cert-dir", "", "`directory` for the PEM pairs nginx reads (versioned, with a live symlink); empty means <run-dir>/certs")
	fs.StringVar(&o.HTTPSListen, "tls-listen", "8443", "nginx listen `address` of the HTTPS server")
	fs.StringVar(&o.HTTPListen, "http-listen", cfg.HTTPListen, "nginx listen `address` of the plain HTTP server (listen.conf in -run-dir, and the -tls-redirect server)")
	fs.StringVar(&o.Locations, "tls-locations", "/etc/nginx/sudoku-locations.conf", "nginx `file` with the public locations, included by the HTTPS server")
	fs.BoolVar(&o.Redirect, "tls-redirect", false, "redirect plain HTTP for the TLS names to HTTPS (308), ACME challenges excepted")
	fs.IntVar(&o.RedirectPort, "tls-redirect-port", 443, "public HTTPS `port` used in redirects")
	fs.BoolVar(&o.HSTS, "tls-hsts", false, "send Strict-Transport-Security over HTTPS")
	fs.IntVar(&o.HSTSMaxAge, "tls-hsts-max-age", 63072000, "HSTS max-age in `seconds`")
	fs.StringVar(&c.accessLog.Path, "access-log-socket", "access-log.sock", "unix datagram `socket` nginx sends short access log lines to (one request in "+strconv.Itoa(logs.SampleEvery)+", and each answer of status 400 and up but 429 and 503), which sudoku-edge counts by status and source (sudoku_edge_nginx_responses_total), relative to -run-dir; empty turns it off")
	fs.BoolVar(&c.accessLog.All, "access-log-all", false, "send a line for every answer to -access-log-socket: exact counts, at sudoku-edge CPU for each answer")
	if err := fs.Parse(args, lookupEnv); err != nil {
		return nil, err
	}
	if err := fs.NonEmpty("run-dir", "nginx", "nginx-conf", "log-level", "www-root", "status-listen",
		"tls-ca", "tls-storage", "tls-listen", "http-listen", "tls-locations"); err != nil {
		return nil, err
	}
	var err error
	if c.sup.Config.TrustedClients, err = conf.ParsePrefixes(cli.SplitList(trusted)); err != nil {
		err = fmt.Errorf("-trusted-clients: %w", err)
	} else if c.sup.Config.RealIPFrom, err = conf.ParsePrefixes(cli.SplitList(realIP)); err != nil {
		err = fmt.Errorf("-real-ip-from: %w", err)
	} else if c.sup.Config.ProxyProtocol && len(c.sup.Config.RealIPFrom) == 0 {
		err = errors.New("-proxy-protocol needs -real-ip-from: the balancers whose PROXY protocol header names the client")
	} else {
		err = c.check()
	}
	if err == nil {
		c.sup.Config.TLS, err = c.tls.options()
	}
	if err == nil && c.holdSockets {
		c.sup.Config.Listen, err = heldSockets(c.tls.o.HTTPListen, c.site.StatusListen, c.sup.Config.TLS)
	}
	if c.renderOnly != "" {
		c.sup.Config.RunDir = c.renderOnly
	}
	if p := c.accessLog.Path; p != "" && !filepath.IsAbs(p) {
		c.accessLog.Path = filepath.Join(c.sup.Config.RunDir, p)
	}
	c.site.RunDir, c.site.ChallengeListen = c.sup.Config.RunDir, c.sup.Config.ChallengeListen
	c.sup.Config.HTTPListen = c.tls.o.HTTPListen
	if err != nil {
		return nil, &cli.UsageError{Err: err}
	}
	return c, nil
}

// render writes what -render-only and -render-conf ask for.
func (c *config) render(ctx context.Context) error {
	if c.renderOnly != "" {
		if err := c.sup.Render(ctx); err != nil {
			return err
		}
	}
	if c.renderConf == "" {
		return nil
	}
	return nginx.RenderSite(c.renderConf, c.site)
}

// check validates the values that no flag.Value checks.
func (c *config) check() error {
	if u := c.sup.Config.Upstream; u.Check() != nil {
		return fmt.Errorf("-max-conns-per-worker %d, -max-fails %d: each must be >= 0; -fail-timeout %v: whole seconds (nginx's fail_timeout)", u.MaxConns, u.MaxFails, u.FailTimeout)
	}
	if l := c.sup.Config.Clients; l.Check() != nil {
		return fmt.Errorf("-client-rate %d, -client-in-flight %d, -batch-rate %d, -batch-in-flight %d, -batch-bodies %d, -max-body %d: each must be at least 1; -client-burst %d, -batch-burst %d at least 0",
			l.Rate, l.InFlight, l.BatchRate, l.BatchInFlight, l.BatchBodies, l.MaxBody, l.Burst, l.BatchBurst)
	}
	if c.sup.Config.WorkerProcesses < 0 {
		return fmt.Errorf("-worker-processes: %d is negative", c.sup.Config.WorkerProcesses)
	}
	if l := c.sup.Config.Limits; l.Connections < 1 || l.Keepalive < 1 {
		return fmt.Errorf("-worker-connections %d, -keepalive %d: each must be at least 1", l.Connections, l.Keepalive)
	}
	if _, _, err := net.SplitHostPort(c.sup.Config.ChallengeListen); err != nil {
		return fmt.Errorf("-challenge-listen: %w", err)
	}
	if _, _, err := net.SplitHostPort(c.metricsListen); err != nil && c.metricsListen != "" {
		return fmt.Errorf("-metrics-listen: %w", err)
	}
	var err error
	if c.level, err = zerolog.ParseLevel(c.logLevel); err != nil {
		return fmt.Errorf("-log-level: %w", err)
	}
	return c.tls.validate()
}

// heldSockets parses the addresses of nginx's listen directives that
// sudoku-edge holds: -http-listen, -status-listen and, with TLS on,
// -tls-listen. They come from the flags that render those directives,
// so a listen the edge holds cannot drift from the one nginx has.
func heldSockets(httpListen, statusListen string, o *edgetls.Options) ([]netip.AddrPort, error) {
	listens := [][2]string{{"-http-listen", httpListen}, {"-status-listen", statusListen}}
	if o != nil {
		listens = append(listens, [2]string{"-tls-listen", o.HTTPSListen})
	}
	var addrs []netip.AddrPort
	for _, l := range listens {
		ap, err := conf.ParseListen([]string{l[1]})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", l[0], err)
		}
		addrs = append(addrs, ap...)
	}
	return slices.Compact(slices.SortedFunc(slices.Values(addrs), netip.AddrPort.Compare)), nil
}

// targetsFlag is a flag.Value that parses worker targets once, at the
// command line.
type targetsFlag struct{ t *[]discover.Target }

func (f targetsFlag) String() string {
	if f.t == nil {
		return ""
	}
	s := make([]string, len(*f.t))
	for i, t := range *f.t {
		s[i] = t.String()
	}
	return strings.Join(s, ",")
}

func (f targetsFlag) Set(s string) error {
	t, err := discover.ParseTargets(cli.SplitList(s))
	if err != nil {
		return err
	}
	*f.t = t
	return nil
}

// listFlag is a flag.Value that splits a comma-separated list once, at
// the command line (cli.SplitList).
type listFlag struct{ l *[]string }

func (f listFlag) String() string {
	if f.l == nil {
		return ""
	}
	return strings.Join(*f.l, ",")
}

func (f listFlag) Set(s string) error {
	*f.l = cli.SplitList(s)
	return nil
}

// positiveDuration is a flag.Value that accepts durations > 0 only.
type positiveDuration struct{ d *time.Duration }

func (p positiveDuration) String() string {
	if p.d == nil {
		return ""
	}
	return p.d.String()
}

func (p positiveDuration) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	if d <= 0 {
		return fmt.Errorf("%s is not positive", s)
	}
	*p.d = d
	return nil
}
