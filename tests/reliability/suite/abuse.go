package suite

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

// fcgiAbuse runs the raw FastCGI abuser inside the compose network against
// each worker's FastCGI listener, its socket file or its port (fcgiTarget),
// while a well-behaved client goes through nginx.
func fcgiAbuse(ctx context.Context, s *suite) result {
	var c checks
	ids, sts, err := s.workerStates(ctx)
	if err != nil {
		return c.abort(err)
	}
	network, err := s.st.networkName(ctx)
	if err != nil {
		return c.abort(err)
	}
	bin, err := filepath.Abs(s.cfg.AbuseBin)
	if err != nil {
		return c.abort(err)
	}
	// No worker port is published on the host.
	var published []string
	for _, cs := range sts {
		for port, binds := range cs.NetworkSettings.Ports {
			for _, b := range binds {
				if b.HostPort != "" {
					published = append(published, fmt.Sprintf("%s %s->%s:%s", short(cs.ID), port, b.HostIP, b.HostPort))
				}
			}
		}
	}
	c.want(len(published) == 0, "worker ports published on the host: %s", strings.Join(published, ", "))

	idle := s.idle(ctx, ids)
	rate := 0.25 * s.C
	stopSample := s.sample(ctx, ids, 100*time.Millisecond, false)
	stop := s.background(ctx, "during-abuse", rate, 5*time.Minute)
	var wg sync.WaitGroup
	outs := make([]string, len(sts))
	errs := make([]error, len(sts))
	for i, cs := range sts {
		target, mounts, err := fcgiTarget(cs)
		if err != nil {
			errs[i] = err
			continue
		}
		mounts = append(mounts, bin+":/fcgiabuse")
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			outs[i], errs[i] = s.runAbuser(ctx, network, mounts, target, i)
		}(i)
	}
	wg.Wait()
	during := stop()
	sleep(ctx, 3*time.Second)
	after := drive(ctx, s.st.baseURL, loadSpec{Name: "after-abuse", Rate: rate, Duration: 5 * time.Second, Conns: s.conns(rate), Puzzles: s.load}, s.out)
	sm := stopSample()

	for i, e := range errs {
		c.want(e == nil, "abuser %d: %v", i, e)
		c.fig("abuser vs %s: %s", short(sts[i].ID), strings.TrimSpace(outs[i]))
	}
	s.rssChecks(&c, ids, idle, sm, 32<<20)
	d := summarize(during.Records, 0)
	a := summarize(after.Records, 0)
	c.fig("client through nginx during: %d sent, failed %d (%s), p99 %s; after: %d sent, failed %d, workers answering %d",
		d.Sent, d.failures(), d.kindsString(), ms(d.P99), a.Sent, a.failures(), len(a.Workers))
	c.want(d.failures() == 0, "client failures during the abuse: %s", d.kindsString())
	c.want(a.failures() == 0, "client failures after the abuse: %s", a.kindsString())
	now, err := s.st.inspect(ctx, ids...)
	if err == nil {
		for i, cs := range now {
			c.want(cs.State.Running && cs.State.Pid == sts[i].State.Pid, "worker %s died or restarted (pid %d -> %d)", short(cs.ID), sts[i].State.Pid, cs.State.Pid)
		}
	}
	c.want(len(a.Workers) == len(ids), "only %d of %d workers answered after the abuse", len(a.Workers), len(ids))
	return c.result()
}

// fcgiTarget is where a worker container serves FastCGI, as fcgiabuse's
// -target takes it, and what the abuser must mount to reach it: with
// SUDOKU_FCGI_LISTEN a socket path, unix:<path> and the volume that holds
// it; else its address on the compose network and the port.
func fcgiTarget(cs containerState) (string, []string, error) {
	env := map[string]string{}
	for _, kv := range cs.Config.Env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	listen := env["SUDOKU_FCGI_LISTEN"]
	if !strings.Contains(listen, "/") {
		_, port, err := net.SplitHostPort(listen)
		if err != nil {
			return "", nil, fmt.Errorf("worker %s: SUDOKU_FCGI_LISTEN %q: %w", short(cs.ID), listen, err)
		}
		for _, n := range cs.NetworkSettings.Networks {
			if n.IPAddress != "" {
				return net.JoinHostPort(n.IPAddress, port), nil, nil
			}
		}
		return "", nil, fmt.Errorf("worker %s has no network address", short(cs.ID))
	}
	path := listen
	if strings.HasSuffix(listen, "/") { // a directory: the socket is named after the worker's id
		id := cs.Config.Hostname
		if v := env["SUDOKU_FCGI_ID"]; v != "" {
			id = v
		}
		path = listen + id + ".sock"
	}
	dir := filepath.Dir(path)
	for _, m := range cs.Mounts {
		if m.Type == "volume" && m.Destination == dir {
			return "unix:" + path, []string{m.Name + ":" + dir}, nil
		}
	}
	return "", nil, fmt.Errorf("worker %s: no volume holds its socket directory %s", short(cs.ID), dir)
}

// runAbuser runs fcgiabuse in a throwaway container on the project's
// network: no published port, read-only, unprivileged.
func (s *suite) runAbuser(ctx context.Context, network string, mounts []string, target string, i int) (string, error) {
	args := s.throwaway(fmt.Sprintf("fcgiabuse-%d", i), network, mounts,
		"/fcgiabuse", "-target", target, "-duration", "20s")
	out, err := s.runEchoingStderr(exec.CommandContext(ctx, "docker", args...))
	return string(out), err
}

// throwaway returns the `docker run` arguments for a short-lived attacker
// on the project's network: its own address, no published port, read-only,
// unprivileged (in nginx's group only), the given files or volumes mounted read-only
// ("source:container").
func (s *suite) throwaway(name, network string, mounts []string, cmd ...string) []string {
	name = s.cfg.Project + "-" + name
	exec.Command("docker", "rm", "-f", name).Run() // a leftover of an interrupted run
	args := []string{"run", "--rm", "--name", name, "--network", network,
		"--label", "com.docker.compose.project=" + s.cfg.Project,
		"--read-only", "--user", "65534:65534", "--memory", "512m",
		// nginx's group (www-data), which the workers' 0660 sockets admit:
		// an attacker on the socket is one that got nginx's rights.
		"--group-add", "33"}
	if s.iso.stackN > 0 {
		args = append(args, "--cpuset-cpus", loadCPU) // the load's core, not the stack's
	}
	for _, m := range mounts {
		args = append(args, "-v", m+":ro")
	}
	args = append(args, "debian:bookworm-slim")
	return append(args, cmd...)
}

// clientAbort: clients that disconnect mid-solve; the worker frees the
// slot within the solve deadline + 10 s on any machine, and within the
// deadline + 100 ms as a bound.
func clientAbort(ctx context.Context, s *suite) result {
	var c checks
	deadline, src := s.solveDeadline(ctx)
	c.fig("solve deadline %v (%s)", deadline, src)
	addr := fmt.Sprintf("127.0.0.1:%d", s.cfg.HTTPPort)
	pool, queue, _ := s.poolQueue(ctx)
	n := 2*(pool+queue)*len(s.workers(ctx)) + 8
	urls, err := s.workerMetricsURLs(ctx)
	c.want(err == nil, "the workers' metrics: %v", err)

	// Two shapes: many GETs of hard puzzles, and batch POSTs of hard lines.
	shapes := []struct {
		name string
		req  func(i int) []byte
		conn int
	}{
		{"GET", func(i int) []byte {
			return []byte(fmt.Sprintf("GET /sudoku?puzzle=%s&unique=1 HTTP/1.1\r\nHost: localhost\r\n\r\n", s.hard[i%len(s.hard)]))
		}, n},
		{"POST batch", func(i int) []byte {
			var b strings.Builder
			// The worker's line cap (10000): with hard puzzles that is
			// seconds of solving, far over the solve deadline.
			for j := 0; j < 10000; j++ {
				fmt.Fprintf(&b, "%d:%s\n", j, s.hard[(i+j)%len(s.hard)])
			}
			return []byte(fmt.Sprintf("POST /sudoku HTTP/1.1\r\nHost: localhost\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s", b.Len(), b.String()))
		}, 4},
	}
	for _, sh := range shapes {
		var conns []net.Conn
		for i := 0; i < sh.conn; i++ {
			conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
			if err != nil {
				continue
			}
			conn.Write(sh.req(i))
			conns = append(conns, conn)
		}
		sleep(ctx, 30*time.Millisecond)
		busyAtAbort := busy(ctx, urls)
		for _, conn := range conns {
			conn.Close()
		}
		aborted := time.Now()
		var freed time.Duration = -1
		for time.Since(aborted) < deadline+10*time.Second {
			if b := busy(ctx, urls); b == 0 {
				freed = time.Since(aborted)
				break
			}
			sleep(ctx, 10*time.Millisecond)
		}
		when := fmt.Sprintf("%v after", freed.Round(time.Millisecond))
		if freed < 0 {
			when = fmt.Sprintf("still busy %v after", (deadline + 10*time.Second).Round(time.Second))
		}
		c.fig("%s: %d clients aborted after 30ms (busy slots+queue then %d)", sh.name, len(conns), busyAtAbort)
		c.bound(freed >= 0 && freed <= deadline+100*time.Millisecond, fmt.Sprintf("<= solve deadline %v + 100ms", deadline), s.capRef(),
			"%s: all slots free %s the abort", sh.name, when)
		c.want(freed >= 0, "%s: slots %s the abort, over the solve deadline %v + 10s", sh.name, when, deadline)
		sleep(ctx, time.Second)
	}
	return c.result()
}

// busy is the sum of busy solver slots and queue depth over the workers
// whose metrics URLs it gets (-1 when one cannot be read), from each one's
// /metrics on its internal port: through nginx the poll would wait behind
// the thousands of connections nginx is closing at that moment, and time
// that wait instead of the worker's.
func busy(ctx context.Context, urls map[string]string) int {
	if len(urls) == 0 {
		return -1
	}
	total := 0.0
	for _, u := range urls {
		m, err := scrapeMetrics(ctx, u)
		if err != nil || !m.has("sudoku_pool_slots_busy") || !m.has("sudoku_pool_queue_depth") {
			return -1
		}
		total += m.value("sudoku_pool_slots_busy") + m.value("sudoku_pool_queue_depth")
	}
	return int(total)
}

// solveDeadline finds the worker's solve timeout: from its container
// environment (SUDOKU_FCGI_SOLVE_TIMEOUT), else the default its -help shows.
func (s *suite) solveDeadline(ctx context.Context) (time.Duration, string) {
	ids := s.workers(ctx)
	if len(ids) == 0 {
		return time.Second, "assumed: no worker"
	}
	out, err := s.st.docker(ctx, "inspect", "-f", "{{range .Config.Env}}{{println .}}{{end}}", ids[0])
	if err == nil {
		for _, l := range strings.Split(out, "\n") {
			if v, ok := strings.CutPrefix(l, "SUDOKU_FCGI_SOLVE_TIMEOUT="); ok {
				if d, err := time.ParseDuration(v); err == nil {
					return d, "SUDOKU_FCGI_SOLVE_TIMEOUT in the worker's environment"
				}
			}
		}
	}
	// The worker prints its usage to stdout and exits 0 on -help.
	cmd := exec.CommandContext(ctx, "docker", "exec", ids[0], "/usr/local/bin/sudoku-fcgi", "-help")
	help, _ := cmd.CombinedOutput()
	if m := reSolveDefault.FindStringSubmatch(string(help)); m != nil {
		if d, err := time.ParseDuration(m[1]); err == nil {
			return d, "the worker's -help default"
		}
	}
	return time.Second, "assumed: not found in the environment or -help"
}

var reSolveDefault = regexp.MustCompile(`(?s)-solve-timeout duration.*?\(default ([0-9a-zµ.]+)\)`)
