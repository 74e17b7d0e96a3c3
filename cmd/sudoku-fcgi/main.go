// Command sudoku-fcgi is the Sudoku FastCGI worker that nginx talks to. It
// serves the public API over FastCGI (-listen), metrics and health over
// plain HTTP on an internal address (-internal-listen), the pprof profiles
// only on an address of their own when -pprof-listen names one (off by
// default), and drains gracefully on SIGTERM or SIGINT.
//
// Every flag has an environment twin, $SUDOKU_FCGI_<FLAG> (shown in
// -help); a flag given on the command line wins over its variable.
package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"runtime"
	"time"

	"github.com/prometheus/common/version"
	"github.com/rs/zerolog"

	"sudoku-fcgi/cmd/cli"
	"sudoku-fcgi/fcgi"
	"sudoku-fcgi/fcgi/fcgiserver"
)

func main() { cli.Main("sudoku-fcgi", run) }

func run(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout io.Writer) error {
	c, err := parseConfig(args, lookupEnv, stdout)
	if err != nil {
		return err
	}
	if c.healthcheck {
		return healthcheck(ctx, c.internalListen)
	}
	var log zerolog.Logger
	logw, closeLog := cli.LogWriter(os.Stderr, c.rt.LogFlush, func(n int) {
		log.Warn().Int("dropped", n).Msg("log lines dropped: stderr's reader did not keep up")
	})
	defer closeLog()
	log = zerolog.New(logw).Level(c.level).With().Timestamp().
		Str("service", "sudoku-fcgi").Str("worker", c.svc.WorkerID).Logger()
	gogc := c.rt.Apply(lookupEnv)

	conns := fcgiserver.NewMetrics("sudoku")
	c.svc.OpenConns = conns.Open
	svc := fcgi.New(c.svc, log)
	reg, err := newRegistry(svc, conns)
	if err != nil {
		return err
	}
	ln, err := listen(c.listen, c.socketGID)
	if err != nil {
		return err
	}
	internal, err := cli.ServeHTTP(log, "internal listener", c.internalListen, svc.InternalHandler(reg))
	if err != nil {
		ln.Close()
		return err
	}
	defer shutdown(internal)
	if c.pprofListen != "" {
		pp, err := cli.ServeHTTP(log, "pprof listener", c.pprofListen, pprofHandler())
		if err != nil {
			ln.Close()
			return err
		}
		defer pp.Close()
	}
	cfg := svc.Config()
	log.Info().Str("version", version.Version).Str("revision", version.Revision).Str("listen", ln.Addr().String()).
		Str("internal_listen", c.internalListen).Int("gomaxprocs", runtime.GOMAXPROCS(0)).Int("gc_percent", c.rt.GCPercent).
		Stringer("memory_limit", &c.rt.MemoryLimit).
		Str("gogc", gogc).Str("pprof_listen", c.pprofListen).
		Int("pool", cfg.PoolSize).Int("queue", cfg.QueueSize).Dur("queue_timeout", cfg.QueueTimeout).
		Dur("solve_timeout", cfg.SolveTimeout).Msg("starting")

	opt := c.serve
	opt.Log, opt.OnDrain, opt.Metrics = log, func() { svc.SetDraining(true) }, conns
	if err := fcgiserver.Serve(ctx, ln, svc, opt); err != nil {
		msg := "stopped"
		if errors.Is(err, fcgiserver.ErrDrainTimeout) {
			msg = "stopped before the drain ended" // requests were cut off
		}
		log.Error().Err(err).Msg(msg)
		return err
	}
	log.Info().Msg("stopped")
	return nil
}

// shutdown stops srv, giving its requests a second to finish.
func shutdown(srv *http.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	srv.Shutdown(ctx)
}
