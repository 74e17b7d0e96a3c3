package nginx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"sudoku-fcgi/nginx/conf"
	"sudoku-fcgi/nginx/discover"
	"sudoku-fcgi/nginx/edgetls"
	"sudoku-fcgi/nginx/logs"
	"sudoku-fcgi/nginx/proc"
)

// Supervisor runs nginx in the foreground and keeps what it reads in step
// with the world: the upstream with the workers it finds (and their
// budget), the trusted clients and, with TLS, the certificates. It also
// answers ACME challenges (ChallengeHandler), which the command serves.
// Set Config (from DefaultConfig) and the fields the command wires, then
// call Run once.
type Supervisor struct {
	Config Config

	// Renew forces the renewal of every certificate on each value (the
	// command sends SIGUSR1 here).
	Renew <-chan os.Signal

	// FastStop lists the signals that turn the graceful stop, once ctx has
	// ended, into a fast one. The supervisor listens for them only from then
	// on, so the signal that ended ctx does not count.
	FastStop []os.Signal

	Metrics *Metrics // nil counts nothing

	// Stdout and Stderr take nginx's access log (its stdout) and relayed
	// error log, drained from pipes as nginx writes them; nil means
	// os.Stdout and os.Stderr. A write that waits holds up that drain and
	// then nginx: give writers that never wait (cli.LogWriter).
	Stdout io.Writer
	Stderr io.Writer
	Log    zerolog.Logger

	cfg       Config // Config, resolved once (Config.resolve)
	challenge atomic.Pointer[http.Handler]
	master    *proc.Master
	applier   *proc.Applier
	disc      *discover.Discovery
	tls       *edgetls.Manager
	upstream  conf.UpstreamFiles // servers.conf and admission.conf, checked once
	addrs     []discover.Addr    // the workers in servers.conf
	wake      chan struct{}      // a round now: nginx could not connect to a worker
}

// ChallengeHandler answers the ACME HTTP-01 challenges of the certificates
// Run keeps, and 404 to anything else, before Run and with TLS off. The
// command serves it on Config.ChallengeListen, where nginx proxies
// /.well-known/acme-challenge/ to.
func (s *Supervisor) ChallengeHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h := s.challenge.Load(); h != nil {
			(*h).ServeHTTP(w, r)
			return
		}
		http.NotFound(w, r)
	})
}

// ExitError is nginx's exit with an error; ExitCode is the status to exit
// with (see ExitCode).
type ExitError struct{ Err error }

func (e *ExitError) Error() string { return "nginx exited: " + e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }
func (e *ExitError) ExitCode() int { return proc.ExitCode(e.Err) }

// Run writes the files nginx needs, starts it and keeps it in step until
// ctx ends; then it stops nginx gracefully (SIGQUIT) and waits for it.
// It returns nil when nginx exits with status 0, an *ExitError when nginx
// exits otherwise (on its own or at the stop), and any other error when
// nginx could not be started.
func (s *Supervisor) Run(ctx context.Context) error {
	var err error
	if s.cfg, err = s.Config.resolve(); err != nil {
		return err
	}
	if s.cfg.ResolveInterval <= 0 {
		return errors.New("nginx: Supervisor needs a positive ResolveInterval")
	}
	stdout, stderr := s.Stdout, s.Stderr
	if stdout == nil {
		stdout = os.Stdout
	}
	if stderr == nil {
		stderr = os.Stderr
	}
	if err := os.MkdirAll(s.cfg.RunDir, 0o755); err != nil {
		return fmt.Errorf("creating run directory: %w", err)
	}
	s.disc = &discover.Discovery{Targets: s.cfg.Workers, Timeout: s.cfg.ResolveInterval, DropRefusing: true,
		Budget: discover.Budget{Hold: s.cfg.BudgetHold}}
	s.wake = make(chan struct{}, 1)
	out, err := logs.OpenOutputs(stdout)
	if err != nil {
		return err
	}
	defer out.Close()
	s.master = &proc.Master{
		New: func() *proc.Process {
			return &proc.Process{Bin: s.cfg.Bin, Prefix: s.cfg.Prefix, Conf: s.cfg.Conf, WorkerProcesses: s.cfg.WorkerProcesses, Stdout: out.Stdout, Stderr: out.Stderr}
		},
		Listen: s.cfg.Listen, Restarted: s.Metrics.restarted, Log: s.Log,
	}
	s.applier = &proc.Applier{Checker: s.master, Reloader: s.master, Log: s.Log, Count: s.Metrics.applied}

	if err := s.writeStartFiles(ctx); err != nil {
		return err
	}
	if s.tls, err = edgetls.New(s.cfg.TLS, s.cfg.RunDir, s.cfg.ChallengeListen, s.applier, s.Metrics.tlsMetrics(), s.Log); err != nil {
		return err
	}
	defer s.tls.Stop() // stops certmagic's goroutines on every way out; safe twice
	challenge := s.tls.ChallengeHandler()
	s.challenge.Store(&challenge)
	if err := s.tls.Prepare(ctx); err != nil {
		return err
	}
	if a := &s.cfg.AccessLog; a.Path != "" {
		if err := a.Listen(s.Metrics.logMetrics()); err != nil {
			return fmt.Errorf("access log socket: %w", err)
		}
		defer a.Close()
		go func() {
			if err := a.Serve(); err != nil {
				s.Log.Error().Err(err).Msg("reading nginx's access log socket")
			}
		}()
	}
	// A configuration nginx refuses ends Run with nginx's status: a restart
	// would only fail again.
	if err := s.master.Check(ctx); err != nil {
		return &ExitError{err}
	}
	if err := s.master.Start(); err != nil {
		return err
	}
	defer s.master.Close() // Stop closes the sockets first
	out.RelayErrors(&logs.ErrorLogRelay{Out: stderr, Log: s.Log, Metrics: s.Metrics.logMetrics(), Unreachable: s.wakeRound}, s.Log)
	s.Log.Info().Int("pid", s.master.Pid()).Str("conf", s.cfg.Conf).Int("inherited_sockets", s.master.Sockets()).Msg("nginx started")

	bg, cancelBg := context.WithCancel(context.Background())
	defer cancelBg()
	go every(bg, s.cfg.ResolveInterval, s.wake, func() { s.round(bg) })
	go s.tls.Run(bg, s.Renew)

	if !s.master.KeepRunning(ctx) {
		return nil // ctx ended while no master ran
	}
	cancelBg()
	s.tls.Stop()
	if err := s.master.Stop(s.FastStop); err != nil {
		return &ExitError{err}
	}
	return nil
}

// Render writes the files nginx.conf includes into RunDir (and with TLS
// the placeholder certificates), as Run does before it starts nginx, and
// returns: the host stack (nginx/render-host.sh) starts nginx on them
// itself. The workers are listed as the targets name them, without
// probing, since they may not run yet.
func (s *Supervisor) Render(ctx context.Context) error {
	var err error
	if s.cfg, err = s.Config.resolve(); err != nil {
		return err
	}
	if err := os.MkdirAll(s.cfg.RunDir, 0o755); err != nil {
		return fmt.Errorf("creating run directory: %w", err)
	}
	s.disc = &discover.Discovery{Targets: s.cfg.Workers, Timeout: s.cfg.ResolveInterval,
		Budget: discover.Budget{Hold: s.cfg.BudgetHold}}
	if err := s.writeStartFiles(ctx); err != nil {
		return err
	}
	tls, err := edgetls.New(s.cfg.TLS, s.cfg.RunDir, s.cfg.ChallengeListen, nil, s.Metrics.tlsMetrics(), s.Log)
	if err != nil {
		return err
	}
	defer tls.Stop()
	return tls.Prepare(ctx)
}

// writeStartFiles writes the run directory's files before nginx starts,
// which refuses to start while an include is missing: the upstream's, from
// a first lookup, and the start files (conf.RenderStart).
func (s *Supervisor) writeStartFiles(ctx context.Context) error {
	var err error
	if s.upstream, err = conf.NewUpstreamFiles(discover.JoinTargets(s.cfg.Workers), s.cfg.Limits.Keepalive, s.cfg.Upstream); err != nil {
		return err
	}
	// The budget is the most workers seen: while fewer answer, those take
	// the missing ones' share of the requests in flight (conf.UpstreamFiles),
	// for BudgetHold at most.
	w, err := s.disc.Next(ctx, nil)
	s.Metrics.round(err)
	if err != nil {
		s.Log.Warn().Err(err).Msg("first worker lookup failed; starting with no upstream server")
	}
	servers, admission, err := s.upstream.Render(w.Addrs, w.Budget)
	if err != nil {
		return err
	}
	for _, f := range []proc.FileChange{
		{Path: filepath.Join(s.cfg.RunDir, "servers.conf"), Data: servers},
		{Path: filepath.Join(s.cfg.RunDir, "admission.conf"), Data: admission},
	} {
		if _, _, err := f.Stage(); err != nil {
			return fmt.Errorf("writing %s: %w", f, err)
		}
	}
	s.addrs = w.Addrs
	s.Metrics.workersNow(len(w.Addrs), w.Budget)
	s.Log.Info().Strs("workers", discover.Strings(w.Addrs)).Str("file", filepath.Join(s.cfg.RunDir, "servers.conf")).Msg("upstream servers written")
	files, err := conf.RenderStart(conf.Start{
		Processes: s.cfg.WorkerProcesses, Limits: s.cfg.Limits, Clients: s.cfg.Clients,
		TrustedClients: s.cfg.TrustedClients, RealIPFrom: s.cfg.RealIPFrom,
		HTTPListen: s.cfg.HTTPListen, ProxyProtocol: s.cfg.ProxyProtocol, AccessLog: s.cfg.AccessLog,
	})
	if err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := proc.WriteFileAtomic(filepath.Join(s.cfg.RunDir, name), files[name], 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	s.Log.Info().Int("worker_processes", s.cfg.WorkerProcesses).Interface("limits", s.cfg.Limits).
		Interface("client_limits", s.cfg.Clients).Int("trusted_clients", len(s.cfg.TrustedClients)).
		Int("trusted_balancers", len(s.cfg.RealIPFrom)).Str("listen", s.cfg.HTTPListen).
		Bool("proxy_protocol", s.cfg.ProxyProtocol).Str("dir", s.cfg.RunDir).Msg("start files written")
	return nil
}

// round finds the workers once (discover.Discovery.Next) and, when the set
// changed or the budget fell, renders the upstream files for them and
// hands both to the applier, which reloads nginx when they pass its check.
// A failed lookup keeps the set. Only one round runs at a time: it owns
// addrs.
func (s *Supervisor) round(ctx context.Context) {
	start := time.Now()
	w, err := s.disc.Next(ctx, s.addrs)
	if ctx.Err() != nil {
		return
	}
	resolved := time.Since(start)
	s.Metrics.round(err)
	if err != nil {
		s.Log.Warn().Err(err).Msg("worker lookup failed; keeping the current upstream")
	}
	var msg string
	switch {
	case len(w.Added) > 0 || len(w.Removed) > 0:
		msg = "worker set changed"
	case w.Lowered:
		msg = "missing workers count as gone; budget lowered"
	default:
		return // nginx has these files already
	}
	start = time.Now()
	servers, admission, err := s.upstream.Render(w.Addrs, w.Budget)
	if err != nil {
		s.Log.Error().Err(err).Msg("rendering the upstream files")
		return
	}
	// servers.conf and admission.conf always change together.
	outcome, err := s.applier.Apply(ctx,
		proc.FileChange{Path: filepath.Join(s.cfg.RunDir, "servers.conf"), Data: servers},
		proc.FileChange{Path: filepath.Join(s.cfg.RunDir, "admission.conf"), Data: admission})
	ev := s.Log.Info()
	if err != nil {
		ev = s.Log.Error().Err(err)
	}
	ev.Strs("added", discover.Strings(w.Added)).Strs("removed", discover.Strings(w.Removed)).
		Strs("workers", discover.Strings(w.Addrs)).Int("budget", w.Budget).Stringer("outcome", outcome).
		Dur("resolved_ms", resolved).Dur("applied_ms", time.Since(start)).Msg(msg)
	s.addrs = w.Addrs
	s.Metrics.workersNow(len(w.Addrs), w.Budget)
}

// wakeRound asks for a discovery round now, without waiting for the next
// tick: nginx failed to connect to a worker, which may be gone (its node
// dead or cut off). Until the round drops it, each request that tries it
// first waits out the connect timeout, and one whose retry meets another
// such worker fails. Wakes while a round runs or is due come to one round.
func (s *Supervisor) wakeRound() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// minWakeGap is the shortest time between the starts of two rounds that a
// wake brings forward: nginx logs a failed connect per request, and a
// worker that stays unreachable without being dropped (the only one left)
// must not keep the supervisor probing back to back.
const minWakeGap = 250 * time.Millisecond

// every calls f every interval until ctx ends, and also when wake has a
// value, at most once per minWakeGap; a call brought forward starts the
// interval again.
func every(ctx context.Context, interval time.Duration, wake <-chan struct{}, f func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var last time.Time
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
			continue
		case <-t.C:
		case <-wake:
			if wait := minWakeGap - time.Since(last); wait > 0 {
				select {
				case <-ctx.Done():
					continue
				case <-time.After(wait):
				}
			}
			t.Reset(interval)
		}
		last = time.Now()
		f()
	}
}
