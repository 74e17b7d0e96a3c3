package logs

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/rs/zerolog"
)

// Outputs are the pipes nginx writes its logs into, which this process
// drains as nginx writes: its access log (stdout) is copied on in whole
// lines (CopyLines), its error log (stderr) goes through an
// ErrorLogRelay. nginx gets files, not pipes that os/exec copies:
// exec.Cmd.Wait waits for such a copy to end, which a dead master's
// orphaned workers would hold up while they finish. It never gets the
// writers themselves: a process blocks in write(2) while its output is
// full, and an nginx worker blocked on its access log answers nothing and
// accepts nothing.
type Outputs struct {
	Stdout, Stderr *os.File // nginx's ends, for every master

	outR, errR      *os.File
	copied, relayed chan struct{}
}

// OpenOutputs makes the pipes and starts copying nginx's stdout to stdout.
func OpenOutputs(stdout io.Writer) (*Outputs, error) {
	errR, errW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("error log pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		errR.Close()
		errW.Close()
		return nil, fmt.Errorf("access log pipe: %w", err)
	}
	o := &Outputs{Stdout: outW, Stderr: errW, outR: outR, errR: errR, copied: make(chan struct{})}
	go func() { defer close(o.copied); CopyLines(stdout, outR) }()
	return o, nil
}

// RelayErrors starts relaying nginx's stderr through e. A relay that
// fails is logged to log and the rest is read and dropped: a full pipe
// would stall nginx.
func (o *Outputs) RelayErrors(e *ErrorLogRelay, log zerolog.Logger) {
	o.relayed = make(chan struct{})
	go func() {
		defer close(o.relayed)
		if err := e.Relay(o.errR); err != nil {
			log.Error().Err(err).Msg("relaying nginx's error log; dropping it from now on")
			io.Copy(io.Discard, o.errR)
		}
	}()
}

// Close closes nginx's ends and waits, up to 2 s each, for the last lines
// nginx wrote before it exited: EOF comes once every process holding a
// pipe is gone, orphaned workers included. Then it closes the rest.
func (o *Outputs) Close() {
	o.Stderr.Close()
	if o.relayed != nil {
		select {
		case <-o.relayed:
		case <-time.After(2 * time.Second):
		}
	}
	o.Stdout.Close()
	select {
	case <-o.copied:
	case <-time.After(2 * time.Second):
	}
	o.outR.Close()
	o.errR.Close()
}
