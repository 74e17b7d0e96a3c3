// Command sudoku-edge is the nginx container's entrypoint. It runs nginx in
// the foreground, re-resolves the worker service so that scaling is picked
// up (nginx 1.22 cannot), and, when domains are configured, keeps TLS
// certificates with ACME (certmagic, HTTP-01) and hands them to nginx.
//
// SIGTERM or SIGINT becomes a graceful nginx stop (SIGQUIT); a second one a
// fast stop (SIGTERM). sudoku-edge exits with nginx's status. SIGUSR1 forces
// the renewal of every certificate.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"sudoku-fcgi/nginx"
)

const name = "sudoku-edge"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout)
	stop()
	if err != nil {
		if !errors.Is(err, errHelp) {
			fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		}
		os.Exit(exitCode(err))
	}
}

var errHelp = errors.New("help requested")

// nginxExit carries nginx's exit status out of run.
type nginxExit struct{ err error }

func (e nginxExit) Error() string { return "nginx exited: " + e.err.Error() }
func (e nginxExit) Unwrap() error { return e.err }

func exitCode(err error) int {
	if ne, ok := errors.AsType[nginxExit](err); ok {
		return nginx.ExitCode(ne.err)
	}
	if errors.Is(err, errHelp) {
		return 0
	}
	return 1
}

type config struct {
	workers         string
	resolveInterval time.Duration
	budgetHold      time.Duration
	upstreamParams  string
	trustedClients  []netip.Prefix
	runDir          string
	nginxBin        string
	nginxConf       string
	nginxPrefix     string
	challengeListen string
	logLevel        string
	tls             tlsFlags
}

func parseConfig(args []string, getenv func(string) string, stdout io.Writer) (config, error) {
	var c config
	fs := newEnvFlagSet(name, stdout)
	fs.StringVar(&c.workers, "workers", "sudoku:9000", "worker `host:port` to resolve; a comma-separated list is allowed")
	c.resolveInterval = 2 * time.Second
	fs.Var(positiveDuration{&c.resolveInterval}, "resolve-interval", "how often to resolve the workers again")
	c.budgetHold = time.Minute
	fs.Var(positiveDuration{&c.budgetHold}, "budget-hold", "how long the workers left take a missing worker's share of the requests in flight, before it counts as gone (a restart or crash is shorter, a scale-down longer)")
	fs.StringVar(&c.upstreamParams, "upstream-params", "", "nginx parameters after each `server ip:port` line, e.g. max_fails=0")
	var trusted string
	fs.StringVar(&trusted, "trusted-clients", "", "comma-separated client `addresses or prefixes` exempt from the per-client limits (a load balancer in front, a load-test host)")
	fs.StringVar(&c.runDir, "run-dir", "/run/sudoku-edge", "`directory` for servers.conf, admission.conf, tls.conf, trusted-clients.conf and exported certificates")
	fs.StringVar(&c.nginxBin, "nginx", "nginx", "nginx `binary`")
	fs.StringVar(&c.nginxConf, "nginx-conf", "/etc/nginx/nginx.conf", "nginx configuration `file` (-c)")
	fs.StringVar(&c.nginxPrefix, "nginx-prefix", "", "nginx prefix `directory` (-p); empty keeps nginx's default")
	fs.StringVar(&c.challengeListen, "challenge-listen", "127.0.0.1:8081", "`address` of the ACME HTTP-01 challenge responder (nginx proxies /.well-known/acme-challenge/ here)")
	fs.StringVar(&c.logLevel, "log-level", "info", "log `level`: debug, info, warn, error")
	c.tls.register(fs)
	if err := fs.parse(args, getenv); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return c, errHelp
		}
		return c, err
	}
	if err := nginx.CheckParams(c.upstreamParams); err != nil {
		return c, err
	}
	if _, err := nginx.ParseTargets(c.workers); err != nil {
		return c, err
	}
	var err error
	if c.trustedClients, err = nginx.ParseTrustedClients(trusted); err != nil {
		return c, fmt.Errorf("-trusted-clients: %w", err)
	}
	if _, _, err := net.SplitHostPort(c.challengeListen); err != nil {
		return c, fmt.Errorf("-challenge-listen: %w", err)
	}
	if _, err := zerolog.ParseLevel(c.logLevel); err != nil {
		return c, fmt.Errorf("-log-level: %w", err)
	}
	if err := c.tls.validate(); err != nil {
		return c, err
	}
	return c, nil
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	c, err := parseConfig(args, getenv, stdout)
	if err != nil {
		return err
	}
	level, _ := zerolog.ParseLevel(c.logLevel)
	log := zerolog.New(os.Stderr).Level(level).With().Timestamp().Str("service", name).Logger()

	if err := os.MkdirAll(c.runDir, 0o755); err != nil {
		return fmt.Errorf("creating run directory: %w", err)
	}
	serversPath := filepath.Join(c.runDir, "servers.conf")
	admissionPath := filepath.Join(c.runDir, "admission.conf")
	tlsPath := filepath.Join(c.runDir, "tls.conf")
	targets, _ := nginx.ParseTargets(c.workers)
	disc := &nginx.Discovery{Targets: targets, Timeout: c.resolveInterval, DropRefusing: true}
	// nginx's error log (its stderr) goes through a relay that holds back
	// floods; its access log (stdout) is buffered by nginx itself.
	errR, errW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("error log pipe: %w", err)
	}
	defer errR.Close()
	proc := &nginx.Process{
		Bin: c.nginxBin, Prefix: c.nginxPrefix, Conf: c.nginxConf,
		Stdout: os.Stdout, Stderr: errW,
	}
	applier := &nginx.Applier{Checker: proc, Reloader: proc, Log: log}

	// Start-up files: nginx refuses to start while an include is missing.
	addrs, err := disc.Resolve(ctx)
	if err != nil {
		log.Warn().Err(err).Msg("first worker lookup failed; starting with no upstream server")
	}
	// The budget is the most workers seen: while fewer answer, those take
	// the missing ones' share of the requests in flight (nginx.RenderUpstream),
	// for -budget-hold at most.
	budget := nginx.Budget{Hold: c.budgetHold}
	upstream, err := c.upstreamFiles(addrs, budget.Update(len(addrs), time.Now()), serversPath, admissionPath)
	if err != nil {
		return err
	}
	for _, f := range upstream {
		if _, _, err := f.Stage(); err != nil {
			return fmt.Errorf("writing %s: %w", f, err)
		}
	}
	log.Info().Strs("workers", addrStrings(addrs)).Str("file", serversPath).Msg("upstream servers written")
	trusted, err := nginx.RenderTrustedClients(c.trustedClients)
	if err != nil {
		return err
	}
	trustedPath := filepath.Join(c.runDir, "trusted-clients.conf")
	if err := nginx.WriteFileAtomic(trustedPath, trusted, 0o644); err != nil {
		return fmt.Errorf("writing trusted-clients.conf: %w", err)
	}
	log.Info().Int("prefixes", len(c.trustedClients)).Str("file", trustedPath).Msg("trusted clients written")

	tlsMgr, err := c.tls.build(ctx, log, c, applier, tlsPath)
	if err != nil {
		return err
	}
	defer tlsMgr.stop() // stops certmagic's goroutines on every way out; safe twice
	if err := tlsMgr.prepare(ctx); err != nil {
		return err
	}

	// The challenge responder runs always (nginx routes challenges to it);
	// without TLS it answers 404.
	ln, err := net.Listen("tcp", c.challengeListen)
	if err != nil {
		return fmt.Errorf("challenge responder: %w", err)
	}
	srv := &http.Server{Handler: tlsMgr.challengeHandler(), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error().Err(err).Msg("challenge responder stopped")
		}
	}()
	defer srv.Close()

	err = proc.Start()
	errW.Close() // nginx and its workers hold the write end now
	if err != nil {
		return err
	}
	relayed := make(chan struct{})
	go func() {
		defer close(relayed)
		errLog := &nginx.ErrorLog{Out: os.Stderr, Log: log}
		if err := errLog.Relay(errR); err != nil {
			// Keep reading: a full pipe would stall nginx.
			log.Error().Err(err).Msg("relaying nginx's error log; dropping it from now on")
			io.Copy(io.Discard, errR)
		}
	}()
	// The last lines nginx wrote before it exited (EOF comes once every
	// process holding the pipe is gone).
	defer func() {
		select {
		case <-relayed:
		case <-time.After(2 * time.Second):
		}
	}()
	log.Info().Int("pid", proc.Pid()).Str("conf", c.nginxConf).Msg("nginx started")

	bg, cancelBg := context.WithCancel(context.Background())
	defer cancelBg()
	// apply renders and loads the upstream files for next; the caller
	// holds mu, which guards addrs and budget.
	var mu sync.Mutex
	apply := func(ctx context.Context, next []netip.AddrPort, msg string) {
		added, removed := nginx.Diff(addrs, next)
		n := budget.Update(len(next), time.Now())
		upstream, err := c.upstreamFiles(next, n, serversPath, admissionPath)
		if err != nil {
			log.Error().Err(err).Msg("rendering the upstream files")
			return
		}
		outcome, err := applier.Apply(ctx, upstream...)
		ev := log.Info()
		if err != nil {
			ev = log.Error().Err(err)
		}
		ev.Strs("added", addrStrings(added)).Strs("removed", addrStrings(removed)).
			Strs("workers", addrStrings(next)).Int("budget", n).Stringer("outcome", outcome).Msg(msg)
		addrs = next
	}
	go disc.Watch(bg, c.resolveInterval, addrs,
		func(ctx context.Context, next []netip.AddrPort) {
			mu.Lock()
			defer mu.Unlock()
			apply(ctx, next, "worker set changed")
		},
		func(err error) { log.Warn().Err(err).Msg("worker lookup failed; keeping the current upstream") })
	// The set may stay the same while the budget's hold runs out.
	go func() {
		t := time.NewTicker(c.resolveInterval)
		defer t.Stop()
		for {
			select {
			case <-bg.Done():
				return
			case <-t.C:
			}
			mu.Lock()
			if budget.Expired(len(addrs), time.Now()) {
				apply(bg, addrs, "missing workers count as gone; budget lowered")
			}
			mu.Unlock()
		}
	}()
	renew := make(chan os.Signal, 1)
	signal.Notify(renew, syscall.SIGUSR1)
	defer signal.Stop(renew)
	go tlsMgr.run(bg, renew)

	select {
	case <-proc.Done():
		err := proc.Wait()
		log.Error().Err(err).Int("exit_code", nginx.ExitCode(err)).Msg("nginx exited on its own")
		if err == nil {
			return nil
		}
		return nginxExit{err}
	case <-ctx.Done():
	}

	log.Info().Msg("stopping nginx gracefully")
	cancelBg()
	tlsMgr.stop()
	if err := proc.Quit(); err != nil {
		log.Warn().Err(err).Msg("sending SIGQUIT to nginx")
	}
	again := make(chan os.Signal, 1)
	signal.Notify(again, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(again)
	for {
		select {
		case <-again:
			log.Warn().Msg("second stop signal: fast nginx stop")
			_ = proc.Terminate()
			continue
		case <-proc.Done():
		}
		break
	}
	err = proc.Wait()
	log.Info().Err(err).Int("exit_code", nginx.ExitCode(err)).Msg("nginx stopped")
	if err != nil {
		return nginxExit{err}
	}
	return nil
}

func addrStrings(addrs []netip.AddrPort) []string {
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = a.String()
	}
	return out
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

// splitList splits a comma-separated list and drops empty items.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// upstreamFiles renders servers.conf and admission.conf for addrs and the
// budget of workers (nginx.RenderUpstream). They always change together.
func (c config) upstreamFiles(addrs []netip.AddrPort, budget int, serversPath, admissionPath string) ([]nginx.Change, error) {
	servers, admission, err := nginx.RenderUpstream(c.workers, addrs, budget, c.upstreamParams)
	if err != nil {
		return nil, err
	}
	return []nginx.Change{
		nginx.FileChange{Path: serversPath, Data: servers},
		nginx.FileChange{Path: admissionPath, Data: admission},
	}, nil
}
