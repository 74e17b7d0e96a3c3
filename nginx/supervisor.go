package nginx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"time"

	"github.com/rs/zerolog"

	"sudoku-fcgi/nginx/admission"
)

// Supervisor runs nginx in the foreground and keeps what it reads in step
// with the world: the upstream with the workers that Discovery finds (and
// the Budget), the trusted clients and, with TLS, the certificates. It also
// serves the ACME challenge responder and, when asked, the metrics
// listener. Set the fields, then call Run once.
type Supervisor struct {
	Bin    string // nginx binary
	Prefix string // nginx -p; empty keeps nginx's compiled-in prefix
	Conf   string // nginx -c
	// RunDir receives the files nginx.conf includes: servers.conf,
	// admission.conf, tls.conf, trusted-clients.conf, and certs/ with TLS.
	RunDir string

	Workers         string        // comma-separated host:port and unix:<glob> targets (ParseTargets)
	Resolver        Resolver      // nil means net.DefaultResolver
	ResolveInterval time.Duration // how often the workers are resolved again; > 0
	BudgetHold      time.Duration // Budget.Hold
	UpstreamParams  string        // nginx parameters after each server address (RenderUpstream)
	TrustedClients  []netip.Prefix

	// ChallengeListen is the address of the ACME HTTP-01 responder that
	// nginx proxies /.well-known/acme-challenge/ to. It runs with TLS off
	// too, and then answers 404.
	ChallengeListen string
	TLS             *TLSOptions // nil turns TLS off
	// Renew forces the renewal of every certificate on each value (the
	// command sends SIGUSR1 here).
	Renew <-chan os.Signal

	// FastStop lists the signals that turn the graceful stop, once ctx has
	// ended, into a fast one. The supervisor listens for them only from then
	// on, so the signal that ended ctx does not count.
	FastStop []os.Signal

	// MetricsListen, when not empty and MetricsHandler is set, is the
	// address of an internal HTTP listener that serves MetricsHandler at
	// /metrics. nginx's servers
	// never reach it.
	MetricsListen  string
	MetricsHandler http.Handler
	Metrics        *Metrics // nil counts nothing

	// Admission runs the admission queue (supervisor_admission.go); nil
	// writes its includes with comments only.
	Admission *admission.Loop

	Stdout io.Writer // nginx's stdout (the access log); nil means os.Stdout
	Stderr io.Writer // where nginx's error log is relayed; nil means os.Stderr
	Log    zerolog.Logger

	proc    *Process
	applier *Applier
	disc    *Discovery
	tls     *edgeTLS
	addrs   []Addr // the workers in servers.conf
	budget  Budget
}

// ExitError is nginx's exit with an error; ExitCode is the status to exit
// with (see ExitCode).
type ExitError struct{ Err error }

func (e *ExitError) Error() string { return "nginx exited: " + e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }
func (e *ExitError) ExitCode() int { return ExitCode(e.Err) }

func (s *Supervisor) path(name string) string { return filepath.Join(s.RunDir, name) }

// Run writes the files nginx needs, starts it and keeps it in step until
// ctx ends; then it stops nginx gracefully (SIGQUIT) and waits for it.
// It returns nil when nginx exits with status 0, an *ExitError when nginx
// exits otherwise (on its own or at the stop), and any other error when
// nginx could not be started.
func (s *Supervisor) Run(ctx context.Context) error {
	targets, err := ParseTargets(s.Workers)
	if err != nil {
		return err
	}
	if s.ResolveInterval <= 0 {
		return errors.New("nginx: Supervisor needs a positive ResolveInterval")
	}
	stdout, stderr := s.Stdout, s.Stderr
	if stdout == nil {
		stdout = os.Stdout
	}
	if stderr == nil {
		stderr = os.Stderr
	}
	if err := os.MkdirAll(s.RunDir, 0o755); err != nil {
		return fmt.Errorf("creating run directory: %w", err)
	}
	s.disc = &Discovery{Targets: targets, Resolver: s.Resolver, Timeout: s.ResolveInterval, DropRefusing: true}
	// nginx's error log (its stderr) goes through a relay that holds back
	// floods; its access log (stdout) is buffered by nginx itself.
	errR, errW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("error log pipe: %w", err)
	}
	defer errR.Close()
	defer errW.Close() // when nginx never started
	s.proc = &Process{Bin: s.Bin, Prefix: s.Prefix, Conf: s.Conf, Stdout: stdout, Stderr: errW}
	s.applier = &Applier{Checker: s.proc, Reloader: s.proc, Log: s.Log}

	if err := s.writeStartFiles(ctx); err != nil {
		return err
	}
	if err := s.writeAdmissionStart(); err != nil {
		return err
	}
	if s.tls, err = newEdgeTLS(s); err != nil {
		return err
	}
	defer s.tls.stop() // stops certmagic's goroutines on every way out; safe twice
	if err := s.tls.prepare(ctx); err != nil {
		return err
	}
	stopListeners, err := s.listen()
	if err != nil {
		return err
	}
	defer stopListeners()

	err = s.proc.Start()
	errW.Close() // nginx and its workers hold the write end now
	if err != nil {
		return err
	}
	relayed := make(chan struct{})
	go func() {
		defer close(relayed)
		errLog := &ErrorLog{Out: stderr, Log: s.Log}
		if err := errLog.Relay(errR); err != nil {
			// Keep reading: a full pipe would stall nginx.
			s.Log.Error().Err(err).Msg("relaying nginx's error log; dropping it from now on")
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
	s.Log.Info().Int("pid", s.proc.Pid()).Str("conf", s.Conf).Msg("nginx started")

	bg, cancelBg := context.WithCancel(context.Background())
	defer cancelBg()
	go every(bg, s.ResolveInterval, func() { s.round(bg) })
	go s.tls.run(bg, s.Renew)
	go s.runAdmission(bg)

	select {
	case <-s.proc.Done():
		err := s.proc.Wait()
		s.Log.Error().Err(err).Int("exit_code", ExitCode(err)).Msg("nginx exited on its own")
		if err != nil {
			return &ExitError{err}
		}
		return nil
	case <-ctx.Done():
	}
	cancelBg()
	s.tls.stop()
	return s.stop()
}

// stop stops nginx gracefully, or fast on one of the FastStop signals, and
// waits for it.
func (s *Supervisor) stop() error {
	s.Log.Info().Msg("stopping nginx gracefully")
	if err := s.proc.Quit(); err != nil {
		s.Log.Warn().Err(err).Msg("sending SIGQUIT to nginx")
	}
	var again chan os.Signal
	if len(s.FastStop) > 0 {
		again = make(chan os.Signal, 1)
		signal.Notify(again, s.FastStop...)
		defer signal.Stop(again)
	}
	for done := false; !done; {
		select {
		case <-again:
			s.Log.Warn().Msg("second stop signal: fast nginx stop")
			_ = s.proc.Terminate()
		case <-s.proc.Done():
			done = true
		}
	}
	err := s.proc.Wait()
	s.Log.Info().Err(err).Int("exit_code", ExitCode(err)).Msg("nginx stopped")
	if err != nil {
		return &ExitError{err}
	}
	return nil
}

// writeStartFiles writes the upstream and trusted-clients files before
// nginx starts: it refuses to start while an include is missing.
func (s *Supervisor) writeStartFiles(ctx context.Context) error {
	addrs, err := s.disc.Resolve(ctx)
	s.Metrics.round(err)
	if err != nil {
		s.Log.Warn().Err(err).Msg("first worker lookup failed; starting with no upstream server")
	}
	// The budget is the most workers seen: while fewer answer, those take
	// the missing ones' share of the requests in flight (RenderUpstream),
	// for BudgetHold at most.
	s.budget = Budget{Hold: s.BudgetHold}
	n := s.budget.Update(len(addrs), time.Now())
	upstream, err := s.upstreamFiles(addrs, n)
	if err != nil {
		return err
	}
	for _, f := range upstream {
		if _, _, err := f.Stage(); err != nil {
			return fmt.Errorf("writing %s: %w", f, err)
		}
	}
	s.addrs = addrs
	s.Metrics.workersNow(len(addrs), n)
	s.Log.Info().Strs("workers", addrStrings(addrs)).Str("file", s.path("servers.conf")).Msg("upstream servers written")
	trusted, err := RenderTrustedClients(s.TrustedClients)
	if err != nil {
		return err
	}
	if err := WriteFileAtomic(s.path("trusted-clients.conf"), trusted, 0o644); err != nil {
		return fmt.Errorf("writing trusted-clients.conf: %w", err)
	}
	s.Log.Info().Int("prefixes", len(s.TrustedClients)).Str("file", s.path("trusted-clients.conf")).Msg("trusted clients written")
	return nil
}

// round resolves the workers once and applies a new set, or the lower
// budget once the missing workers' hold has run out (the set may stay the
// same meanwhile). A failed lookup keeps the set. Only one round runs at
// a time: it owns addrs and budget.
func (s *Supervisor) round(ctx context.Context) {
	next, err := s.disc.Resolve(ctx)
	if ctx.Err() != nil {
		return
	}
	s.Metrics.round(err)
	if err != nil {
		s.Log.Warn().Err(err).Msg("worker lookup failed; keeping the current upstream")
		next = s.addrs
	}
	switch {
	case !slices.Equal(next, s.addrs):
		s.applyWorkers(ctx, next, "worker set changed")
	case s.budget.Expired(len(next), time.Now()):
		s.applyWorkers(ctx, next, "missing workers count as gone; budget lowered")
	}
}

// applyWorkers renders and loads the upstream files for next.
func (s *Supervisor) applyWorkers(ctx context.Context, next []Addr, msg string) {
	added, removed := Diff(s.addrs, next)
	n := s.budget.Update(len(next), time.Now())
	upstream, err := s.upstreamFiles(next, n)
	if err != nil {
		s.Log.Error().Err(err).Msg("rendering the upstream files")
		return
	}
	outcome, err := s.apply(ctx, upstream...)
	ev := s.Log.Info()
	if err != nil {
		ev = s.Log.Error().Err(err)
	}
	ev.Strs("added", addrStrings(added)).Strs("removed", addrStrings(removed)).
		Strs("workers", addrStrings(next)).Int("budget", n).Stringer("outcome", outcome).Msg(msg)
	s.addrs = next
	s.Metrics.workersNow(len(next), n)
}

// apply is the Applier's Apply, counted.
func (s *Supervisor) apply(ctx context.Context, changes ...Change) (Outcome, error) {
	outcome, err := s.applier.Apply(ctx, changes...)
	s.Metrics.applied(outcome)
	return outcome, err
}

// upstreamFiles renders servers.conf and admission.conf for addrs and the
// budget of workers (RenderUpstream). They always change together.
func (s *Supervisor) upstreamFiles(addrs []Addr, budget int) ([]Change, error) {
	servers, admission, err := RenderUpstream(s.Workers, addrs, budget, s.UpstreamParams)
	if err != nil {
		return nil, err
	}
	return []Change{
		FileChange{Path: s.path("servers.conf"), Data: servers},
		FileChange{Path: s.path("admission.conf"), Data: admission},
	}, nil
}

// every calls f every interval until ctx ends.
func every(ctx context.Context, interval time.Duration, f func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-t.C:
			f()
		}
	}
}

func addrStrings(addrs []Addr) []string {
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = a.String()
	}
	return out
}
