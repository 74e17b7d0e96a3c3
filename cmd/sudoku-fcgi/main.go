// Command sudoku-fcgi is the Sudoku FastCGI worker that nginx talks to. It
// serves the public API over FastCGI (-listen) and metrics, health and
// pprof over plain HTTP on an internal address (-internal-listen), and
// drains gracefully on SIGTERM or SIGINT.
//
// Every flag has an environment twin (shown in -help); a flag given on the
// command line wins over its environment variable.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/rs/zerolog"

	"sudoku-fcgi/fcgi"
)

// version is set with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sudoku-fcgi:", err)
		os.Exit(1)
	}
}

type config struct {
	listen, internalListen, id, logLevel string
	pool, queue, maxConns, maxBatch      int
	maxConnsPerPeer                      int
	batchParallel, gcPercent, maxProcs   int
	queueTimeout, solveTimeout, drain    time.Duration
	linger                               time.Duration
	batchTimeout                         time.Duration
	maxBody                              int64
	accessLog, healthcheck               bool
	benchHTTP                            string
	logFlush                             time.Duration
}

// envFlags registers flags whose defaults come from environment twins.
type envFlags struct {
	fs     *flag.FlagSet
	getenv func(string) string
	errs   []error
}

func (e *envFlags) env(name, env string) (string, bool) {
	v := e.getenv(env)
	return v, v != ""
}

func (e *envFlags) str(p *string, name, env, def, usage string) {
	if v, ok := e.env(name, env); ok {
		def = v
	}
	e.fs.StringVar(p, name, def, usage+" (env "+env+")")
}

func (e *envFlags) int(p *int, name, env string, def int, usage string) {
	if v, ok := e.env(name, env); ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			e.errs = append(e.errs, fmt.Errorf("%s=%q: not an integer", env, v))
		}
		def = n
	}
	e.fs.IntVar(p, name, def, usage+" (env "+env+")")
}

func (e *envFlags) int64(p *int64, name, env string, def int64, usage string) {
	if v, ok := e.env(name, env); ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			e.errs = append(e.errs, fmt.Errorf("%s=%q: not an integer", env, v))
		}
		def = n
	}
	e.fs.Int64Var(p, name, def, usage+" (env "+env+")")
}

func (e *envFlags) dur(p *time.Duration, name, env string, def time.Duration, usage string) {
	if v, ok := e.env(name, env); ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			e.errs = append(e.errs, fmt.Errorf("%s=%q: not a duration", env, v))
		}
		def = d
	}
	e.fs.DurationVar(p, name, def, usage+" (env "+env+")")
}

func (e *envFlags) bool(p *bool, name, env string, def bool, usage string) {
	if v, ok := e.env(name, env); ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			e.errs = append(e.errs, fmt.Errorf("%s=%q: not a boolean", env, v))
		}
		def = b
	}
	e.fs.BoolVar(p, name, def, usage+" (env "+env+")")
}

func parseFlags(args []string, getenv func(string) string, out io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("sudoku-fcgi", flag.ContinueOnError)
	fs.SetOutput(out)
	host, _ := os.Hostname()
	if host == "" {
		host = "sudoku"
	}
	e := &envFlags{fs: fs, getenv: getenv}
	e.str(&c.listen, "listen", "SUDOKU_LISTEN", ":9000", "FastCGI address: host:port, or a unix socket path (contains a /)")
	e.str(&c.internalListen, "internal-listen", "SUDOKU_INTERNAL_LISTEN", ":9001", "internal HTTP address for /metrics, /healthz, /readyz, /debug/pprof/")
	e.str(&c.id, "id", "SUDOKU_WORKER_ID", host, "worker id sent as X-Sudoku-Worker")
	e.int(&c.pool, "pool", "SUDOKU_POOL", 0, "solver slots (0: GOMAXPROCS)")
	e.int(&c.queue, "queue", "SUDOKU_QUEUE", 1024, "puzzles that may wait for a solver slot (0: none)")
	e.dur(&c.queueTimeout, "queue-timeout", "SUDOKU_QUEUE_TIMEOUT", 200*time.Millisecond, "longest wait for a solver slot before 503; a puzzle whose expected wait is over half of it gets 503 at once")
	e.dur(&c.solveTimeout, "solve-timeout", "SUDOKU_SOLVE_TIMEOUT", time.Second, "budget for one solve before 503 (keep below nginx's fastcgi_read_timeout)")
	e.int(&c.maxConns, "max-conns", "SUDOKU_MAX_CONNS", 1024, "open FastCGI connections; above it the worker stops accepting")
	e.int(&c.maxConnsPerPeer, "max-conns-per-peer", "SUDOKU_MAX_CONNS_PER_PEER", 0, "open FastCGI connections from one TCP address; more are closed at once (0: half of -max-conns)")
	e.dur(&c.drain, "drain-timeout", "SUDOKU_DRAIN_TIMEOUT", 10*time.Second, "graceful drain limit after SIGTERM/SIGINT")
	e.dur(&c.linger, "drain-linger", "SUDOKU_DRAIN_LINGER", 0, "after SIGTERM/SIGINT, stay up at least this long with the listener closed (refusing), so that sudoku-edge drops the worker before its address vanishes")
	e.int(&c.maxBatch, "max-batch-lines", "SUDOKU_MAX_BATCH_LINES", 10000, "puzzle lines in one POST (413 above)")
	e.int64(&c.maxBody, "max-body", "SUDOKU_MAX_BODY", 1<<20, "POST body bytes (413 above)")
	e.int(&c.batchParallel, "batch-parallel", "SUDOKU_BATCH_PARALLEL", 0, "puzzles of one batch solved at once (0: pool size)")
	e.dur(&c.batchTimeout, "batch-timeout", "SUDOKU_BATCH_TIMEOUT", 30*time.Second, "deadline of one POST batch; lines still unsolved then are answered ServerTooBusy")
	e.int(&c.gcPercent, "gc-percent", "SUDOKU_GC_PERCENT", 400, "GC target percentage (debug.SetGCPercent); 0 keeps GOGC or the runtime default")
	e.int(&c.maxProcs, "maxprocs", "SUDOKU_MAXPROCS", 0, "GOMAXPROCS (0 keeps the runtime's choice)")
	e.str(&c.logLevel, "log-level", "SUDOKU_LOG_LEVEL", "info", "log level: debug, info, warn, error")
	e.bool(&c.accessLog, "access-log", "SUDOKU_ACCESS_LOG", true, "log one line per request")
	e.dur(&c.logFlush, "log-flush", "SUDOKU_LOG_FLUSH", 100*time.Millisecond, "buffer log lines up to this long (0: write each line at once)")
	e.str(&c.benchHTTP, "bench-http", "SUDOKU_BENCH_HTTP", "", "also serve the public API over plain HTTP on this address, to compare against FastCGI in benchmarks (off when empty; never expose it)")
	fs.BoolVar(&c.healthcheck, "healthcheck", false, "GET http://127.0.0.1:<internal port>/readyz and exit 0 if ready, 1 if not (for Docker HEALTHCHECK)")
	fs.Usage = func() {
		fmt.Fprintf(out, "Usage: sudoku-fcgi [flags]\n\nSudoku FastCGI worker (%s). Flags override their environment twins.\n\n", version)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if err := errors.Join(e.errs...); err != nil {
		return c, err
	}
	for _, r := range c.id {
		if r <= ' ' || r == 0x7f || r > '~' {
			return c, fmt.Errorf("-id %q: use printable ASCII without spaces", c.id)
		}
	}
	switch {
	case c.pool < 0, c.queue < 0, c.maxConns < 1, c.maxConnsPerPeer < 0, c.maxBatch < 1, c.maxBody < 1, c.batchParallel < 0, c.maxProcs < 0:
		return c, errors.New("-pool, -queue, -batch-parallel, -maxprocs, -max-conns-per-peer must be >= 0; -max-conns, -max-batch-lines, -max-body >= 1")
	case c.queueTimeout <= 0, c.solveTimeout <= 0, c.batchTimeout <= 0, c.drain <= 0, c.logFlush < 0, c.linger < 0:
		return c, errors.New("-queue-timeout, -solve-timeout, -batch-timeout and -drain-timeout must be > 0; -log-flush and -drain-linger >= 0")
	}
	return c, nil
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	c, err := parseFlags(args, getenv, stdout)
	if err != nil {
		return err
	}
	if c.healthcheck {
		return healthcheck(ctx, c.internalListen)
	}
	level, err := zerolog.ParseLevel(c.logLevel)
	if err != nil {
		return fmt.Errorf("-log-level: %w", err)
	}
	var logw io.Writer = os.Stderr
	if c.logFlush > 0 {
		bw := newBufferedWriter(os.Stderr, c.logFlush)
		defer bw.Close()
		logw = bw
	}
	log := zerolog.New(logw).Level(level).With().Timestamp().
		Str("service", "sudoku-fcgi").Str("worker", c.id).Logger()

	if c.maxProcs > 0 {
		runtime.GOMAXPROCS(c.maxProcs)
	}
	if c.gcPercent > 0 && getenv("GOGC") == "" {
		debug.SetGCPercent(c.gcPercent)
	}

	queue := c.queue
	if queue == 0 {
		queue = -1 // the library reads 0 as "default"; -queue 0 means no queue
	}
	m := fcgi.NewMetrics()
	svc := fcgi.New(fcgi.Config{
		WorkerID: c.id, PoolSize: c.pool, QueueSize: queue, QueueTimeout: c.queueTimeout,
		SolveTimeout: c.solveTimeout, MaxBatchLines: c.maxBatch, MaxBodyBytes: c.maxBody,
		BatchParallel: c.batchParallel, BatchTimeout: c.batchTimeout, AccessLog: c.accessLog,
	}, log, m)
	reg := prometheus.NewRegistry()
	if err := errors.Join(
		m.Register(reg),
		reg.Register(svc.Collector()),
		reg.Register(collectors.NewGoCollector()),
		reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})),
		reg.Register(collectors.NewBuildInfoCollector()),
	); err != nil {
		return fmt.Errorf("registering metrics: %w", err)
	}

	ln, err := listen(c.listen)
	if err != nil {
		return err
	}
	iln, err := net.Listen("tcp", c.internalListen)
	if err != nil {
		ln.Close()
		return fmt.Errorf("internal listener: %w", err)
	}
	isrv := &http.Server{Handler: svc.InternalHandler(reg), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := isrv.Serve(iln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error().Err(err).Msg("internal listener failed")
		}
	}()
	if c.benchHTTP != "" {
		bln, err := net.Listen("tcp", c.benchHTTP)
		if err != nil {
			ln.Close()
			iln.Close()
			return fmt.Errorf("bench-http listener: %w", err)
		}
		bsrv := &http.Server{Handler: svc, ReadHeaderTimeout: 5 * time.Second}
		defer bsrv.Close()
		go bsrv.Serve(bln)
	}
	cfg := svc.Config()
	log.Info().Str("version", version).Str("listen", ln.Addr().String()).Str("internal_listen", iln.Addr().String()).
		Int("gomaxprocs", runtime.GOMAXPROCS(0)).Int("gc_percent", currentGCPercent()).
		Int("pool", cfg.PoolSize).Int("queue", cfg.QueueSize).Dur("queue_timeout", cfg.QueueTimeout).
		Dur("solve_timeout", cfg.SolveTimeout).Int("max_conns", c.maxConns).Msg("starting")

	err = svc.Serve(ctx, ln, fcgi.ServeOptions{MaxConns: c.maxConns, MaxConnsPerPeer: c.maxConnsPerPeer, DrainTimeout: c.drain, Linger: c.linger})
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	isrv.Shutdown(sctx)
	cancel()
	if err != nil {
		log.Error().Err(err).Msg("stopped")
		return err
	}
	log.Info().Msg("stopped")
	return nil
}

func currentGCPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// listen opens a TCP address, or a unix socket when addr contains a '/'
// (a stale socket file is removed, and the socket is made writable for
// nginx's user).
func listen(addr string) (net.Listener, error) {
	if !strings.Contains(addr, "/") {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("fastcgi listener: %w", err)
		}
		return ln, nil
	}
	if fi, err := os.Lstat(addr); err == nil && fi.Mode()&os.ModeSocket != 0 {
		os.Remove(addr)
	}
	ln, err := net.Listen("unix", addr)
	if err != nil {
		return nil, fmt.Errorf("fastcgi listener: %w", err)
	}
	if err := os.Chmod(addr, 0o666); err != nil {
		ln.Close()
		return nil, fmt.Errorf("fastcgi listener: %w", err)
	}
	return ln, nil
}

// healthcheck asks the local internal listener whether the worker is ready.
func healthcheck(ctx context.Context, internal string) error {
	host, port, err := net.SplitHostPort(internal)
	if err != nil {
		return fmt.Errorf("-internal-listen %q: %w", internal, err)
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	u := "http://" + net.JoinHostPort(host, port) + "/readyz"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: %s answered %s", u, resp.Status)
	}
	return nil
}
