package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rs/zerolog"

	"sudoku-fcgi/cmd/cli"
	"sudoku-fcgi/cmd/contract"
	"sudoku-fcgi/fcgi"
	"sudoku-fcgi/fcgi/fcgiserver"
	"sudoku-fcgi/solver"
)

const summary = `The Sudoku FastCGI worker that nginx talks to. It serves the public API
over FastCGI (-listen), metrics and health over plain HTTP on an internal
address (-internal-listen), the pprof profiles only on an address of their
own when -pprof-listen names one (off by default), and drains gracefully on
SIGTERM or SIGINT.`

// config is what the command line and the environment set.
type config struct {
	listen, internalListen, pprofListen string
	socketGroup                         string
	socketGID                           int // -1: the worker's own group
	svc                                 fcgi.Config
	serve                               fcgiserver.Options
	rt                                  cli.Runtime
	logLevel                            string
	level                               zerolog.Level
	healthcheck                         bool
}

// defaultConfig is the configuration before flags and environment: every
// flag's default comes from it.
func defaultConfig() config {
	host, _ := os.Hostname()
	if host == "" {
		host = "sudoku"
	}
	c := config{
		listen:         "127.0.0.1:9000",
		internalListen: "127.0.0.1:9001",
		svc:            fcgi.DefaultConfig(),
		serve:          fcgiserver.DefaultOptions(),
		rt:             cli.DefaultRuntime(),
		logLevel:       "info",
	}
	c.svc.WorkerID = host
	c.serve.Linger = contract.DrainLinger
	return c
}

// parseConfig reads the flags and their environment twins and checks them;
// every error it returns is a *cli.UsageError (or flag.ErrHelp).
func parseConfig(args []string, lookupEnv func(string) (string, bool), out io.Writer) (config, error) {
	c := defaultConfig()
	fs := cli.NewFlagSet("sudoku-fcgi", summary, out)
	fs.Engine = solver.Engine()
	fs.StringVar(&c.listen, "listen", c.listen, "FastCGI `address`: host:port (loopback by default; the image listens on :9000), a unix socket path (contains a /), or a directory ending in / for a socket named <id>.sock in it (replicas sharing the directory get a file each)")
	fs.StringVar(&c.internalListen, "internal-listen", c.internalListen, "internal HTTP `address` for /metrics, /healthz, /readyz (loopback by default; the image listens on :9001)")
	fs.StringVar(&c.socketGroup, "socket-group", c.socketGroup, "`group` (name or id) of the unix socket, which is read-write for its owner and group only: one nginx's user belongs to (empty: the worker's own group; ignored for TCP)")
	fs.StringVar(&c.svc.WorkerID, "id", c.svc.WorkerID, "worker id sent as X-Sudoku-Worker")
	fs.IntVar(&c.svc.PoolSize, "pool", c.svc.PoolSize, "solver slots (0: GOMAXPROCS)")
	fs.IntVar(&c.svc.QueueSize, "queue", c.svc.QueueSize, "puzzles that may wait for a solver slot (0: none)")
	fs.DurationVar(&c.svc.QueueTimeout, "queue-timeout", c.svc.QueueTimeout, "longest wait for a solver slot before 503; a puzzle whose expected wait is over half of it gets 503 at once")
	fs.DurationVar(&c.svc.SolveTimeout, "solve-timeout", c.svc.SolveTimeout, "budget for one solve before 503 (with -queue-timeout, keep below sudoku-edge's -read-timeout)")
	fs.IntVar(&c.serve.MaxConns, "max-conns", c.serve.MaxConns, "open FastCGI connections; above it the worker stops accepting")
	fs.IntVar(&c.serve.MaxConnsPerPeer, "max-conns-per-peer", c.serve.MaxConnsPerPeer, "open FastCGI connections from one peer, a TCP address or, over a unix socket, a user id; more are closed at once (0: half of -max-conns)")
	fs.DurationVar(&c.serve.DrainTimeout, "drain-timeout", c.serve.DrainTimeout, "graceful drain limit after SIGTERM/SIGINT")
	fs.DurationVar(&c.serve.Linger, "drain-linger", c.serve.Linger, "after SIGTERM/SIGINT, stay up at least this long with the listener closed (refusing), so that sudoku-edge drops the worker before its address vanishes")
	fs.IntVar(&c.svc.MaxBatchLines, "max-batch-lines", c.svc.MaxBatchLines, "puzzle lines in one POST (413 above)")
	fs.Int64Var(&c.svc.MaxBodyBytes, "max-body", c.svc.MaxBodyBytes, "POST body `bytes` (413 above)")
	fs.IntVar(&c.svc.BatchParallel, "batch-parallel", c.svc.BatchParallel, "puzzles of one batch solved at once (0: pool size)")
	fs.DurationVar(&c.svc.BatchTimeout, "batch-timeout", c.svc.BatchTimeout, "deadline of one POST batch; lines still unsolved then are answered ServerTooBusy")
	c.rt.AddFlags(fs)
	fs.StringVar(&c.logLevel, "log-level", c.logLevel, "log `level`: debug, info, warn, error")
	fs.BoolVar(&c.svc.AccessLog, "access-log", c.svc.AccessLog, "log one line per request")
	fs.StringVar(&c.pprofListen, "pprof-listen", c.pprofListen, "serve net/http/pprof's /debug/pprof/ over HTTP on this `address` (off when empty; a port without a host, :6060, listens on 127.0.0.1 only)")
	fs.BoolVar(&c.healthcheck, "healthcheck", false, "GET http://127.0.0.1:<internal port>/readyz and exit 0 if ready, 1 if not (for Docker HEALTHCHECK)")
	if err := fs.Parse(args, lookupEnv); err != nil {
		return c, err
	}
	if err := fs.NonEmpty("listen", "internal-listen", "id", "log-level"); err != nil {
		return c, err
	}
	if err := c.check(); err != nil {
		return c, &cli.UsageError{Err: err}
	}
	return c, nil
}

// check rejects values the worker cannot run with, turns a -listen
// directory into the socket path in it, and parses the log level.
func (c *config) check() error {
	for _, r := range c.svc.WorkerID {
		if r <= ' ' || r == 0x7f || r > '~' {
			return fmt.Errorf("-id %q: use printable ASCII without spaces", c.svc.WorkerID)
		}
	}
	switch s := &c.svc; {
	case s.PoolSize < 0, s.QueueSize < 0, c.serve.MaxConns < 1, c.serve.MaxConnsPerPeer < 0, s.MaxBatchLines < 1, s.MaxBodyBytes < 1, s.BatchParallel < 0:
		return errors.New("-pool, -queue, -batch-parallel, -max-conns-per-peer must be >= 0; -max-conns, -max-batch-lines, -max-body >= 1")
	case s.QueueTimeout <= 0, s.SolveTimeout <= 0, s.BatchTimeout <= 0, c.serve.DrainTimeout <= 0, c.serve.Linger < 0:
		return errors.New("-queue-timeout, -solve-timeout, -batch-timeout and -drain-timeout must be > 0; -drain-linger >= 0")
	}
	if err := c.rt.Check(); err != nil {
		return err
	}
	if strings.HasPrefix(c.pprofListen, ":") {
		c.pprofListen = "127.0.0.1" + c.pprofListen
	}
	c.socketGID = -1
	// A TCP -listen ignores it: one environment serves both transports.
	if c.socketGroup != "" && strings.Contains(c.listen, "/") {
		gid, err := strconv.Atoi(c.socketGroup)
		if err != nil {
			g, lerr := user.LookupGroup(c.socketGroup)
			if lerr != nil {
				return fmt.Errorf("-socket-group: %w", lerr)
			}
			gid, _ = strconv.Atoi(g.Gid)
		}
		if gid < 0 {
			return fmt.Errorf("-socket-group %q: want a group name or id >= 0", c.socketGroup)
		}
		c.socketGID = gid
	}
	if dir, ok := strings.CutSuffix(c.listen, "/"); ok {
		if !contract.SocketName(c.svc.WorkerID + ".sock") {
			return fmt.Errorf("-listen %q names a directory: the socket is named after -id, and %q is no file name (letters, digits, '.', '_', '-')", c.listen, c.svc.WorkerID)
		}
		c.listen = dir + "/" + c.svc.WorkerID + ".sock"
	} else if strings.Contains(c.listen, "/") && !contract.SocketName(filepath.Base(c.listen)) {
		// sudoku-edge lists and renders only such names: refuse here what
		// it would leave out of nginx's upstream without a word.
		return fmt.Errorf("-listen %q: %q is no socket file name sudoku-edge takes (letters, digits, '.', '_', '-', no leading '.')", c.listen, filepath.Base(c.listen))
	}
	var err error
	if c.level, err = zerolog.ParseLevel(c.logLevel); err != nil {
		return fmt.Errorf("-log-level: %w", err)
	}
	return nil
}
