package suite

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The overload's bound (tests/bench/RESULTS.md, "The overload's bound"): a
// stack whose cores pay for its rejections too answers, offered k times
// its saturation, at most (1 - k r) / (1 - r) of it, with r the CPU of a
// rejection over that of an answer. benchOverload measures a (CPU per
// answer at the saturation), b (CPU per rejection, from an overload's CPU
// less its answers'), r = b / a and the goodput at each k, all from the
// containers' cgroups in one run.

// benchKs are the overloads the benchmark offers, in saturations; the
// figures take k as what the client managed to send.
var benchKs = []float64{2, 3}

// benchOverload is the -bench-overload run: a figure table, no criteria
// but that every figure was measured.
func benchOverload(ctx context.Context, s *suite) result {
	var c checks
	ids, err := s.stackContainers(ctx)
	if err != nil {
		return c.abort(err)
	}
	// a: CPU per answer with 32 in flight, nothing shed.
	const n = 20000
	cpu0, err := cgroupCPU(ctx, s, ids)
	if err != nil {
		return c.abort(err)
	}
	t0 := time.Now()
	sats, err := s.saturation(ctx, s.puzzles, n, 32)
	if err != nil || len(sats) == 0 {
		return c.abort(fmt.Errorf("saturation: %w", err))
	}
	cpu1, err := cgroupCPU(ctx, s, ids)
	if err != nil {
		return c.abort(err)
	}
	sat := sats[0]
	a := (cpu1 - cpu0) / n
	c.fig("saturation %.0f/s with 32 in flight; the stack used %.2f cores for it, %.1f us CPU per answer (a)",
		sat, (cpu1-cpu0).Seconds()/time.Since(t0).Seconds(), a.Seconds()*1e6)
	const dur = 20 * time.Second
	for _, k := range benchKs {
		before, err := cgroupCPU(ctx, s, ids)
		if err != nil {
			return c.abort(err)
		}
		res := drive(ctx, s.st.baseURL, loadSpec{Name: fmt.Sprintf("bench-k%g", k), Rate: k * sat, Duration: dur,
			Conns: 1600, MaxInFlight: 1600, Puzzles: s.load, Timeout: 30 * time.Second}, s.out)
		after, err := cgroupCPU(ctx, s, ids)
		if err != nil {
			return c.abort(err)
		}
		if res.Err != nil {
			return c.abort(res.Err)
		}
		sum := res.summary(dur)
		// nginx's built-in 503 page (a lever of the benchmark) has no
		// Retry-After: a rejection all the same.
		rejected := sum.Kinds[kindBusy] + sum.Kinds[kindBusyBare]
		used := after - before
		b := (used - time.Duration(sum.OK)*a) / time.Duration(max(1, rejected))
		r := b.Seconds() / a.Seconds()
		// The bound holds for what reached the stack: the client may send
		// less than it offers (MaxInFlight), so k is the rate sent.
		sent := sum.Rate / sat
		bound := (1 - sent*r) / (1 - r)
		g := sum.Goodput / sat
		c.fig("offered %g x: sent %.0f/s = k %.2f (skipped %d), goodput %.0f/s = %.2f of the saturation, %d rejected; the stack used %.2f cores; %.1f us per rejection (b), r = %.2f, bound (1 - k r) / (1 - r) = %.2f, goodput / bound = %.2f; other failures: %s",
			k, sum.Rate, sent, res.Skipped, sum.Goodput, g, rejected, used.Seconds()/dur.Seconds(), b.Seconds()*1e6, r, bound, g/bound, sum.kindsString())
		c.want(rejected > 0, "k = %g: no rejection to measure", k)
		if err := s.restore(ctx); err != nil {
			return c.abort(err)
		}
	}
	return c.result()
}

// stackContainers returns the ids of nginx's and the workers' containers.
func (s *suite) stackContainers(ctx context.Context) ([]string, error) {
	var ids []string
	for _, svc := range []string{"nginx", "sudoku"} {
		c, err := s.st.containers(ctx, svc, false)
		if err != nil {
			return nil, err
		}
		ids = append(ids, c...)
	}
	if len(ids) == 0 {
		return nil, errors.New("no nginx or worker container runs")
	}
	return ids, nil
}

// cgroupCPU sums the CPU time the containers' cgroups have used.
func cgroupCPU(ctx context.Context, s *suite, ids []string) (time.Duration, error) {
	sts, err := s.st.inspect(ctx, ids...)
	if err != nil {
		return 0, err
	}
	var total time.Duration
	for _, st := range sts {
		d, err := processCgroupCPU(st.State.Pid)
		if err != nil {
			return 0, fmt.Errorf("container %s: %w", short(st.ID), err)
		}
		total += d
	}
	return total, nil
}

// processCgroupCPU reads the CPU time of pid's cgroup: cpuacct.usage on
// cgroup v1, cpu.stat's usage_usec on v2.
func processCgroupCPU(pid int) (time.Duration, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var v2 string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// hierarchy-ID:controllers:path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			v2 = parts[2]
		}
		for _, ctl := range strings.Split(parts[1], ",") {
			if ctl == "cpuacct" {
				b, err := os.ReadFile(filepath.Join("/sys/fs/cgroup/cpuacct", parts[2], "cpuacct.usage"))
				if err != nil {
					b, err = os.ReadFile(filepath.Join("/sys/fs/cgroup", parts[1], parts[2], "cpuacct.usage"))
				}
				if err != nil {
					return 0, err
				}
				ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
				return time.Duration(ns), err
			}
		}
	}
	if v2 == "" {
		return 0, fmt.Errorf("pid %d: no cpuacct or unified cgroup", pid)
	}
	return cpuStatUsage(filepath.Join("/sys/fs/cgroup", v2, "cpu.stat"))
}

// cpuStatUsage reads usage_usec from a cgroup v2 cpu.stat.
func cpuStatUsage(path string) (time.Duration, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
			us, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return time.Duration(us) * time.Microsecond, err
		}
	}
	return 0, fmt.Errorf("%s: no usage_usec", path)
}
