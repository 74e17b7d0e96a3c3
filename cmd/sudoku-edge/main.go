// Command sudoku-edge is the nginx container's entrypoint. It runs nginx in
// the foreground, re-resolves the worker service so that scaling is picked
// up (nginx 1.22 cannot), and, when domains are configured, keeps TLS
// certificates with ACME (certmagic, HTTP-01) and hands them to nginx. It
// serves its metrics (sudoku_build_info, discovery, reloads) on an internal
// listener, -metrics-listen.
//
// Every flag has an environment twin, $SUDOKU_EDGE_<FLAG> (shown in -help);
// a flag given on the command line wins. SIGTERM or SIGINT becomes a
// graceful nginx stop (SIGQUIT); a second one a fast stop (SIGTERM).
// sudoku-edge exits with nginx's status. SIGUSR1 forces the renewal of
// every certificate. README.md beside this file is the operator's how-to.
package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"

	"sudoku-fcgi/cmd/cli"
	"sudoku-fcgi/nginx"
)

const name = "sudoku-edge"

func main() { cli.Main(name, run) }

// run parses the flags and env, wires the logger, the metrics registry and
// the signals into an nginx.Supervisor and runs it until ctx ends.
func run(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout io.Writer) error {
	c, err := parseConfig(args, lookupEnv, stdout)
	if err != nil {
		return err
	}
	s := &c.sup
	// Every output goes through a LogWriter, which never waits: nginx
	// writes its logs into pipes the supervisor drains into Stdout and
	// Stderr, and would stop answering while one of them is full.
	logw, closeLog := cli.LogWriter(os.Stderr, 0, func(n int) {
		s.Log.Warn().Int("dropped", n).Msg("log lines dropped: stderr's reader did not keep up")
	})
	defer closeLog()
	outw, closeOut := cli.LogWriter(os.Stdout, 0, func(n int) {
		s.Log.Warn().Int("dropped", n).Msg("access log writes dropped: stdout's reader did not keep up")
	})
	defer closeOut()
	s.Log = zerolog.New(logw).Level(c.level).With().Timestamp().Str("service", name).Logger()
	s.Stdout, s.Stderr = outw, logw
	if c.renderOnly != "" || c.renderConf != "" {
		return c.render(ctx)
	}
	s.Config.AccessLog = c.accessLog

	reg := prometheus.NewRegistry()
	reg.MustRegister(version.NewCollector("sudoku")) // a fresh registry cannot refuse it
	s.Metrics = nginx.NewMetrics()
	if err := reg.Register(s.Metrics); err != nil {
		return err
	}
	// The edge's own listeners: the ACME challenge responder, which nginx
	// proxies to (it answers 404 with TLS off), and the metrics listener,
	// which nginx's servers never reach.
	challenge, err := cli.ServeHTTP(s.Log, "challenge responder", s.Config.ChallengeListen, s.ChallengeHandler())
	if err != nil {
		return err
	}
	defer challenge.Close()
	if c.metricsListen != "" {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		metrics, err := cli.ServeHTTP(s.Log, "metrics listener", c.metricsListen, mux)
		if err != nil {
			return err
		}
		defer metrics.Close()
	}

	renew := make(chan os.Signal, 1)
	signal.Notify(renew, syscall.SIGUSR1)
	defer signal.Stop(renew)
	s.Renew = renew
	s.FastStop = []os.Signal{syscall.SIGINT, syscall.SIGTERM}
	return s.Run(ctx)
}
