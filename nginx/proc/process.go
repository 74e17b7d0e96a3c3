// Package proc runs the nginx master process: a [Master] starts it on the
// listening sockets it holds, starts it again when it dies and stops it
// gracefully; a [Process] checks configurations with `nginx -t`, reloads
// (SIGHUP) and stops (SIGQUIT); an [Applier] puts a change to the files
// nginx reads in place only when the check passes. It knows nothing of
// what the files say.
package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Process runs one nginx master in the foreground and talks to it with
// signals. The zero value is not usable: set at least Bin and Conf.
type Process struct {
	Bin    string // nginx binary
	Prefix string // -p; empty keeps nginx's compiled-in prefix
	Conf   string // -c
	Stdout io.Writer
	Stderr io.Writer
	// WorkerProcesses, when > 0, sets worker_processes on the command line
	// (nginx.conf then has none).
	WorkerProcesses int
	// Listeners are handed to nginx as inherited sockets (see
	// openListeners); its listen directives for the same addresses use
	// them instead of binding their own.
	Listeners []*os.File

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	err  error // from Wait, valid after done is closed
}

var (
	_ Checker  = (*Process)(nil)
	_ Reloader = (*Process)(nil)
)

// errNotRunning is returned by signals sent before Start or after exit.
var errNotRunning = errors.New("nginx: master process is not running")

func (p *Process) args(extra ...string) []string {
	var args []string
	if p.Prefix != "" {
		args = append(args, "-p", p.Prefix)
	}
	global := "daemon off;"
	if p.WorkerProcesses > 0 {
		global += " worker_processes " + strconv.Itoa(p.WorkerProcesses) + ";"
	}
	args = append(args, "-c", p.Conf, "-g", global)
	return append(args, extra...)
}

// Check runs `nginx -t` on the configuration files as they are now. The
// error carries nginx's own explanation.
func (p *Process) Check(ctx context.Context) error {
	out, err := exec.CommandContext(ctx, p.Bin, p.args("-t", "-q")...).CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if msg == "" {
			return fmt.Errorf("nginx -t: %w", err)
		}
		return fmt.Errorf("nginx -t: %w: %s", err, msg)
	}
	return nil
}

// Start starts the master with `-g 'daemon off;'` in its own process group,
// so that a terminal's Ctrl-C reaches only the supervisor, which then stops
// nginx gracefully.
func (p *Process) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return errors.New("nginx: already started")
	}
	cmd := exec.Command(p.Bin, p.args()...)
	cmd.Stdout, cmd.Stderr = p.Stdout, p.Stderr
	if len(p.Listeners) > 0 {
		cmd.ExtraFiles = p.Listeners
		cmd.Env = append(os.Environ(), inheritEnv(len(p.Listeners)))
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting nginx: %w", err)
	}
	p.cmd = cmd
	p.done = make(chan struct{})
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(p.done)
	}()
	return nil
}

// Done is closed when the master has exited. It is nil before Start.
func (p *Process) Done() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

// Wait waits for the master to exit and returns its error (an
// *exec.ExitError for a non-zero status).
func (p *Process) Wait() error {
	done := p.Done()
	if done == nil {
		return errNotRunning
	}
	<-done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Pid is the master's process id, or 0 before Start.
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Reload asks the master to re-read its configuration (SIGHUP): new workers
// start with it and old ones finish their requests before they exit.
func (p *Process) Reload() error { return p.signal(syscall.SIGHUP) }

// Quit asks the master for a graceful stop (SIGQUIT): it stops accepting
// and exits after in-flight requests are done.
func (p *Process) Quit() error { return p.signal(syscall.SIGQUIT) }

// Terminate asks for a fast stop (SIGTERM).
func (p *Process) Terminate() error { return p.signal(syscall.SIGTERM) }

func (p *Process) signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return errNotRunning
	}
	select {
	case <-p.done:
		return errNotRunning
	default:
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("sending %v to nginx: %w", sig, err)
	}
	return nil
}

// ExitCode maps Wait's error to a process exit status: 0 for nil, nginx's
// status for a normal exit, 128+signal when a signal killed it, 1 otherwise.
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return 1
}

// failedToRun reports whether a master's exit says that nginx cannot run:
// it exits with a status of its own (1) when it fails to start (a
// configuration it refuses, a file it cannot open), while a master that is
// killed, or told to stop, exits on a signal or with 0.
func failedToRun(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Exited() && ws.ExitStatus() != 0
}
