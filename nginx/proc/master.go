package proc

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"
)

// Master keeps one nginx master running on the listening sockets it holds:
// it starts the master, starts a new one whenever it exits on its own,
// and stops it gracefully. It checks and reloads through the master
// running now (the Applier's Checker and Reloader). Set the fields, then
// call Start once.
type Master struct {
	// New returns the next master to start, not started yet; Master hands
	// it the held sockets (Process.Listeners).
	New func() *Process
	// Listen lists the addresses of nginx's listen directives that Master
	// opens itself and hands to every master it starts (the NGINX
	// environment variable, as in nginx's binary upgrade), so that a
	// master that dies is restarted without refusing a connection. A
	// listen directive for another address binds its own socket, which is
	// closed while no master runs.
	Listen []netip.AddrPort
	// Restarted, when set, is called after each restart.
	Restarted func()
	Log       zerolog.Logger

	mu        sync.Mutex
	p         *Process
	listeners []*os.File // the Listen sockets; nil while refusing
}

var (
	_ Checker  = (*Master)(nil)
	_ Reloader = (*Master)(nil)
)

// Restart backoff: the first restart comes at once, each further one
// within restartReset of the last waits twice as long, up to
// restartMaxBackoff.
const (
	restartMinBackoff = 100 * time.Millisecond
	restartMaxBackoff = 10 * time.Second
	restartReset      = 30 * time.Second
)

func (m *Master) current() *Process {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.p == nil {
		m.p = m.New()
	}
	return m.p
}

func (m *Master) set(p *Process) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.p = p
}

// next is the next master, with the held sockets.
func (m *Master) next() *Process {
	p := m.New()
	p.Listeners = m.listeners
	return p
}

// Check checks the configuration with the master running now, or before
// Start with the one it will start.
func (m *Master) Check(ctx context.Context) error {
	m.mu.Lock()
	p := m.p
	m.mu.Unlock()
	if p == nil {
		p = m.New() // not started: only its command line counts
	}
	return p.Check(ctx)
}

// Reload sends SIGHUP to the master running now (see Process.Reload).
func (m *Master) Reload() error {
	m.mu.Lock()
	p := m.p
	m.mu.Unlock()
	if p == nil {
		return errNotRunning
	}
	return p.signal(syscall.SIGHUP)
}

// Pid is the process id of the master running now.
func (m *Master) Pid() int { return m.current().Pid() }

// Sockets is how many listening sockets Master holds.
func (m *Master) Sockets() int { return len(m.listeners) }

// Start opens the listening sockets and starts the first master.
func (m *Master) Start() error {
	ls, err := openListeners(m.Listen)
	if err != nil {
		return err
	}
	m.listeners = ls
	p := m.next()
	if err := p.Start(); err != nil {
		m.Close()
		return err
	}
	m.set(p)
	return nil
}

// Close closes the listening sockets; Stop closes them first.
func (m *Master) Close() {
	if err := closeAll(m.listeners); err != nil {
		m.Log.Warn().Err(err).Msg("closing the listening sockets")
	}
	m.listeners = nil
}

// KeepRunning restarts the nginx master whenever it exits on its own,
// until ctx ends. The listening sockets stay open in this process, so
// the kernel queues new connections in their backlog meanwhile and the
// new master takes them over; the dead master's workers, orphaned, get
// SIGQUIT: they finish what they hold and exit. A master that failed to
// start has the sockets closed until the next one starts (refuse). It
// reports whether a master is running when ctx ends.
func (m *Master) KeepRunning(ctx context.Context) bool {
	var backoff time.Duration
	lastStart := time.Now()
	for {
		p := m.current()
		select {
		case <-ctx.Done():
			return true
		case <-p.Done():
		}
		err := p.Wait()
		m.Log.Error().Err(err).Int("exit_code", ExitCode(err)).Int("pid", p.Pid()).Msg("nginx master exited on its own; restarting it")
		quitOrphans(p.Pid(), m.Log)
		if time.Since(lastStart) > restartReset {
			backoff = 0
		}
		cannotRun := failedToRun(err)
		for {
			if cannotRun {
				m.refuse()
			}
			select {
			case <-ctx.Done():
				return false
			case <-time.After(backoff):
			}
			backoff = min(max(2*backoff, restartMinBackoff), restartMaxBackoff)
			if err := m.listenAgain(); err != nil {
				m.Log.Error().Err(err).Dur("retry_in", backoff).Msg("reopening the listening sockets failed")
				continue
			}
			next := m.next()
			lastStart = time.Now()
			if err := next.Start(); err != nil {
				m.Log.Error().Err(err).Dur("retry_in", backoff).Msg("restarting nginx failed")
				cannotRun = true
				continue
			}
			m.set(next)
			if m.Restarted != nil {
				m.Restarted()
			}
			m.Log.Warn().Int("pid", next.Pid()).Msg("nginx restarted")
			break
		}
	}
}

// refuse closes the listening sockets while no nginx can run. Held open,
// the kernel would go on completing connections into a backlog that no
// process accepts from, and their clients would wait for their own
// timeouts; closed, the connections queued are reset and new ones are
// refused at once, so clients and balancers go elsewhere. listenAgain
// opens them anew for the next start.
func (m *Master) refuse() {
	if m.listeners == nil {
		return
	}
	m.Close()
	m.Log.Error().Msg("nginx cannot start; refusing connections until it runs again")
}

// listenAgain opens the listening sockets that refuse closed, before a
// start.
func (m *Master) listenAgain() error {
	if m.listeners != nil || len(m.Listen) == 0 {
		return nil
	}
	ls, err := openListeners(m.Listen)
	if err != nil {
		return err
	}
	m.listeners = ls
	return nil
}

// quitOrphans asks the workers of the dead master pid, its process group
// (Start puts each master in its own), to stop gracefully, and reaps them
// when they come back to this process (PID 1 in a container, or a
// subreaper).
func quitOrphans(pid int, log zerolog.Logger) {
	if pid <= 0 {
		return
	}
	if err := syscall.Kill(-pid, syscall.SIGQUIT); err != nil && !errors.Is(err, syscall.ESRCH) {
		log.Warn().Err(err).Int("pgid", pid).Msg("asking the dead master's workers to quit")
	}
	go func() {
		for {
			var ws syscall.WaitStatus
			if _, err := syscall.Wait4(-pid, &ws, 0, nil); errors.Is(err, syscall.EINTR) {
				continue
			} else if err != nil {
				return // ECHILD: none left that is ours to reap
			}
		}
	}()
}

// Stop stops the master running now gracefully (SIGQUIT), or fast
// (SIGTERM) on one of the fastStop signals, and returns its Wait error.
// It closes the listening sockets as it begins.
func (m *Master) Stop(fastStop []os.Signal) error {
	m.Log.Info().Msg("stopping nginx gracefully")
	p := m.current()
	if err := p.Quit(); err != nil {
		m.Log.Warn().Err(err).Msg("sending SIGQUIT to nginx")
	}
	// nginx closes its listening sockets when it quits; this process's own
	// copies would keep them open until the last worker has drained (up to
	// worker_shutdown_timeout), the kernel accepting new connections into
	// the backlog that no one serves. Closed now, a new connection is
	// refused at once and its client retries elsewhere.
	m.Close()
	var again chan os.Signal
	if len(fastStop) > 0 {
		again = make(chan os.Signal, 1)
		signal.Notify(again, fastStop...)
		defer signal.Stop(again)
	}
	for done := false; !done; {
		select {
		case <-again:
			m.Log.Warn().Msg("second stop signal: fast nginx stop")
			_ = p.Terminate()
		case <-p.Done():
			done = true
		}
	}
	err := p.Wait()
	m.Log.Info().Err(err).Int("exit_code", ExitCode(err)).Msg("nginx stopped")
	return err
}
