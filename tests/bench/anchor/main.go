// Command anchor serves the worker's fcgi.Service over plain HTTP/1.1 with
// net/http: the alternative to FastCGI that an engineer putting Go behind
// nginx would pick (proxy_pass with upstream keep-alive). make bench-path
// runs two of them behind a minimal nginx as its anchor row, the figure the
// shipped FastCGI path is measured against.
//
// It runs as sudoku-fcgi does by default, so that what differs is the
// protocol and its server alone: fcgi.DefaultConfig (the pool sized by
// GOMAXPROCS, one access line per request at level info), the worker's
// runtime (cli.DefaultRuntime: its GC target, memory limit and log batch,
// with the same flags) and the logs through cli.LogWriter.
package main

import (
	"context"
	"io"
	"os"

	"github.com/rs/zerolog"

	"sudoku-fcgi/cmd/cli"
	"sudoku-fcgi/fcgi"
)

func main() { cli.Main("anchor", run) }

func run(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout io.Writer) error {
	fs := cli.NewFlagSet("anchor", "The worker's service over plain HTTP/1.1, the anchor of make bench-path.", stdout)
	listen := fs.String("listen", "127.0.0.1:31700", "HTTP `address`")
	id := fs.String("id", "anchor", "worker id sent as X-Sudoku-Worker")
	rt := cli.DefaultRuntime()
	rt.AddFlags(fs)
	if err := fs.Parse(args, lookupEnv); err != nil {
		return err
	}
	if err := rt.Check(); err != nil {
		return &cli.UsageError{Err: err}
	}
	rt.Apply(lookupEnv)
	logw, closeLog := cli.LogWriter(os.Stderr, rt.LogFlush, nil)
	defer closeLog()
	log := zerolog.New(logw).Level(zerolog.InfoLevel).With().Timestamp().Str("worker", *id).Logger()
	cfg := fcgi.DefaultConfig()
	cfg.WorkerID = *id
	srv, err := cli.ServeHTTP(log, "anchor", *listen, fcgi.New(cfg, log))
	if err != nil {
		return err
	}
	<-ctx.Done()
	return srv.Close()
}
