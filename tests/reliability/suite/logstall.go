package suite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// logStallFor is how long logStall keeps the stack's logs unread.
const logStallFor = 10 * time.Second

// logStall: the container runtime stops reading the logs of nginx and of
// every worker for logStallFor under 0.5 C: each container's
// containerd-shim, which carries its stdout and stderr to Docker, is
// stopped (SIGSTOP) and then continued. A process that writes to a full
// pipe waits in write(2): nginx writing its access log straight to the
// container's stdout stopped answering and accepting until the shim read
// again (tests/reliability/HISTORY.md). Nothing may fail: every process
// drains its logs without waiting for them, and drops lines instead.
func logStall(ctx context.Context, s *suite) result {
	var c checks
	ids := append(s.workers(ctx), s.nginxID(ctx))
	sts, err := s.st.inspect(ctx, ids...)
	if err != nil {
		return c.abort(err)
	}
	var shims []int
	for _, st := range sts {
		pid, err := parentPid(st.State.Pid)
		if err != nil {
			return c.abort(fmt.Errorf("container %s's log reader: %w", short(st.ID), err))
		}
		shims = append(shims, pid)
	}
	signal := func(sig syscall.Signal) error {
		var errs []error
		for _, pid := range shims {
			errs = append(errs, syscall.Kill(pid, sig))
		}
		return errors.Join(errs...)
	}
	stop := s.background(ctx, "log-stall", s.half(), 2*time.Minute)
	sleep(ctx, 3*time.Second)
	serr := signal(syscall.SIGSTOP)
	sleep(ctx, logStallFor)
	cerr := signal(syscall.SIGCONT)
	sleep(ctx, 3*time.Second)
	res := stop()
	sum := summarize(res.Records, 0)
	c.fig("logs of %d containers unread for %v (containerd-shim pids %v stopped); %d requests at %.0f/s, failed %d (%s), p99 %s%s",
		len(shims), logStallFor, shims, sum.Sent, s.half(), sum.failures(), sum.kindsString(), ms(sum.P99), failedWhen(res.Records))
	c.want(serr == nil && cerr == nil, "stopping or continuing the log readers: %v", errors.Join(serr, cerr))
	c.want(sum.failures() == 0, "%d failed requests while the logs were unread: %s", sum.failures(), sum.kindsString())
	c.bound(sum.Max <= time.Second, "<= 1s", s.capRef(), "max latency %s", ms(sum.Max))
	return c.result()
}

// parentPid returns the parent of process pid, as /proc (the host's: the
// suite runs beside Docker) shows it.
func parentPid(pid int) (int, error) {
	if pid <= 0 {
		return 0, fmt.Errorf("no process (pid %d): not running", pid)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "PPid:"); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, fmt.Errorf("no PPid in /proc/%d/status", pid)
}
