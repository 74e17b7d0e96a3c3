package nginx

import (
	"errors"
	"net/netip"
	"runtime"
	"time"

	"sudoku-fcgi/cmd/contract"
	"sudoku-fcgi/nginx/conf"
	"sudoku-fcgi/nginx/discover"
	"sudoku-fcgi/nginx/edgetls"
	"sudoku-fcgi/nginx/logs"
)

// Config is what the edge runs with: nginx, its run directory and held
// sockets, the workers and the files rendered for them, and TLS. The
// command starts from DefaultConfig and sets what its flags say.
type Config struct {
	Bin    string // nginx binary
	Prefix string // nginx -p; empty keeps nginx's compiled-in prefix
	Conf   string // nginx -c
	// WorkerProcesses, when > 0, is nginx's worker_processes, passed with
	// -g: nginx's own "auto" counts the host's CPUs, not the container's
	// quota (the command passes the CPUs it may use, runtime.GOMAXPROCS).
	// nginx.conf must not set it then.
	WorkerProcesses int
	// Limits are nginx's connection limits for all its worker processes
	// together, rendered per process (events.conf, keepalive.conf); zero
	// fields take DefaultConfig's.
	Limits conf.ProcessLimits
	// Clients are the per-client limits and the batch bodies' count
	// (client-limits.conf, route-limits.conf, batch-limits.conf); the zero
	// value takes DefaultConfig's.
	Clients conf.ClientLimits
	// RunDir receives the files nginx.conf includes (conf.RunDirFiles),
	// and certs/ with TLS.
	RunDir string

	// Listen lists the addresses of nginx's listen directives
	// (conf.ParseListen) whose sockets the supervisor holds and hands to
	// every nginx master it starts (proc.Master), so that a master that
	// dies is restarted without refusing a connection. A graceful stop
	// closes them as it begins, so new connections are refused while nginx
	// drains.
	Listen []netip.AddrPort

	Workers         []discover.Target // at least one (discover.ParseTargets)
	ResolveInterval time.Duration     // how often the workers are resolved again; > 0
	BudgetHold      time.Duration     // how long the workers left take a missing one's share before it counts as gone
	Upstream        conf.Upstream     // each worker's server parameters; the zero value sets no max_conns
	TrustedClients  []netip.Prefix
	// RealIPFrom lists the load balancers in front of nginx whose
	// X-Forwarded-For names the client (real-ip.conf); empty believes no
	// header.
	RealIPFrom []netip.Prefix
	// HTTPListen is the plain HTTP server's listen (conf.ParseListen's form),
	// written to listen.conf, which the shipped nginx.conf includes in that
	// server; empty writes comments only (an nginx.conf of its own).
	HTTPListen string
	// ProxyProtocol makes every public listen (listen.conf, tls.conf) take
	// the PROXY protocol, and nginx take the client's address from its
	// header when the peer is one of RealIPFrom (real_ip_header
	// proxy_protocol) instead of from X-Forwarded-For. Every connection
	// must then start with the header: only for balancers that send it.
	ProxyProtocol bool

	// ChallengeListen is the address of the ACME HTTP-01 responder that
	// nginx proxies /.well-known/acme-challenge/ to, where the command
	// serves Supervisor.ChallengeHandler (with TLS off too, answering
	// 404); tls.conf names it and certmagic takes its port.
	ChallengeListen string
	TLS             *edgetls.Options // nil turns TLS off
	// AccessLog, with a Path, is the socket nginx sends short access log
	// lines to, counted into the Supervisor's Metrics (access-log.conf).
	AccessLog logs.AccessLog
}

// DefaultConfig returns the configuration sudoku-edge runs with unless
// told otherwise; its flags take their defaults from it. The resolve
// interval is the contract's, which the workers' linger allows for.
func DefaultConfig() Config {
	workers, _ := discover.ParseTargets([]string{"sudoku:9000"}) // a valid constant
	return Config{
		Bin:             "nginx",
		Conf:            "/etc/nginx/nginx.conf",
		WorkerProcesses: runtime.GOMAXPROCS(0),
		Limits:          conf.DefaultProcessLimits,
		Clients:         conf.DefaultClientLimits,
		RunDir:          "/run/sudoku-edge",
		Workers:         workers,
		ResolveInterval: contract.ResolveInterval,
		BudgetHold:      time.Minute,
		Upstream:        conf.DefaultUpstream,
		HTTPListen:      "8080",
		ChallengeListen: "127.0.0.1:8081",
	}
}

// resolve is the one place where settings get their documented meaning:
// Limits' zero fields and a zero Clients take DefaultConfig's, and TLS
// follows ProxyProtocol. It refuses a Config without workers.
func (c Config) resolve() (Config, error) {
	if len(c.Workers) == 0 {
		return c, errors.New("nginx: Supervisor needs a worker target")
	}
	if c.Limits.Connections == 0 {
		c.Limits.Connections = conf.DefaultProcessLimits.Connections
	}
	if c.Limits.Keepalive == 0 {
		c.Limits.Keepalive = conf.DefaultProcessLimits.Keepalive
	}
	if c.Clients == (conf.ClientLimits{}) {
		c.Clients = conf.DefaultClientLimits
	}
	if c.TLS != nil {
		tls := *c.TLS
		tls.ProxyProtocol = c.ProxyProtocol
		c.TLS = &tls
	}
	return c, nil
}
