package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"

	"sudoku-fcgi/solver"
)

// newRegistry registers the service's and the FastCGI server's metrics,
// the Go and process collectors, and sudoku_build_info with the solver's
// engine as its label engine ("scalar" or "asm-avx2").
func newRegistry(svc, conns prometheus.Collector) (*prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	if err := errors.Join(
		reg.Register(svc),
		reg.Register(conns),
		reg.Register(collectors.NewGoCollector()),
		reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})),
		reg.Register(collectors.NewBuildInfoCollector()),
		reg.Register(versioncollector.NewCollector("sudoku",
			versioncollector.WithExtraConstLabels(prometheus.Labels{"engine": solver.Engine()}))),
	); err != nil {
		return nil, fmt.Errorf("registering metrics: %w", err)
	}
	return reg, nil
}

// socketMode lets the worker's user and the socket's group connect, and no
// one else: connecting to a unix socket needs write permission on it.
const socketMode = 0o660

// listen opens a TCP address, or a unix socket when addr contains a '/'
// (a stale socket file, one that refuses, is removed; one that accepts
// belongs to a live worker and is an error). The socket gets socketMode
// and, when gid >= 0, that group (one nginx's user belongs to).
func listen(addr string, gid int) (net.Listener, error) {
	if !strings.Contains(addr, "/") {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("fastcgi listener: %w", err)
		}
		return ln, nil
	}
	if fi, err := os.Lstat(addr); err == nil && fi.Mode()&os.ModeSocket != 0 {
		if c, err := net.DialTimeout("unix", addr, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("fastcgi listener: %s is in use (another worker with the same -id?)", addr)
		}
		os.Remove(addr)
	}
	ln, err := net.Listen("unix", addr)
	if err != nil {
		return nil, fmt.Errorf("fastcgi listener: %w", err)
	}
	// Until these take effect the socket has the umask's mode, which
	// gives others no write permission either (umask 022: 0755).
	if err := os.Chmod(addr, socketMode); err != nil {
		ln.Close()
		return nil, fmt.Errorf("fastcgi listener: %w", err)
	}
	if gid >= 0 {
		if err := os.Chown(addr, -1, gid); err != nil {
			ln.Close()
			return nil, fmt.Errorf("fastcgi listener: -socket-group: %w", err)
		}
	}
	return ln, nil
}

// pprofHandler serves net/http/pprof's profiles, for the -pprof-listen
// listener only.
func pprofHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
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
