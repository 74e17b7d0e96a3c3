// Command plainhttp serves the worker's public handler (fcgi.Service, the
// same code sudoku-fcgi runs behind nginx) over plain net/http, with no nginx
// and no FastCGI. tests/bench/hoststack.sh measures it beside the real stack,
// so the cost of nginx + FastCGI can be stated as a ratio. It is a benchmark
// helper, not a way to run the service.
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
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"sudoku-fcgi/fcgi"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout)
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "plainhttp:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("plainhttp", flag.ContinueOnError)
	fs.SetOutput(stdout)
	def := func(env, v string) string {
		if e := getenv(env); e != "" {
			return e
		}
		return v
	}
	listen := fs.String("listen", def("PLAINHTTP_LISTEN", "127.0.0.1:30990"), "HTTP address, loopback ($PLAINHTTP_LISTEN)")
	gc := fs.Int("gc-percent", 400, "GC target percentage, as sudoku-fcgi sets it")
	procs := fs.Int("maxprocs", 0, "GOMAXPROCS (0 keeps the runtime's choice)")
	accessLog := fs.Bool("access-log", true, "log one line per request, as sudoku-fcgi does by default")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *procs > 0 {
		runtime.GOMAXPROCS(*procs)
	}
	if *gc > 0 && getenv("GOGC") == "" {
		debug.SetGCPercent(*gc)
	}
	log := zerolog.New(os.Stderr).With().Timestamp().Str("service", "plainhttp").Logger()
	svc := fcgi.New(fcgi.Config{WorkerID: "plainhttp", AccessLog: *accessLog}, log, fcgi.NewMetrics())
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listening: %w", err)
	}
	srv := &http.Server{Handler: svc, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	log.Info().Str("listen", ln.Addr().String()).Int("gomaxprocs", runtime.GOMAXPROCS(0)).Msg("starting")
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
