package suite

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// stack drives the compose project the suite runs against. It only ever
// touches containers, networks and volumes carrying its own project label.
type stack struct {
	project     string
	composeFile string
	extraFiles  []string // more -f files (tests of the suite itself)
	env         []string // SUDOKU_HTTP_PORT etc. for compose
	compose     []string // "docker-compose" or "docker compose"
	// baseURL is where load goes: nginx's own address on the compose
	// network once the stack is up (direct), else publishedURL.
	baseURL string
	// publishedURL is nginx's published port on loopback, through
	// Docker's port proxy: http://127.0.0.1:<SUDOKU_HTTP_PORT>.
	publishedURL string
	// trustHost puts the host's address on the network in
	// SUDOKU_TRUSTED_CLIENTS: the suite's load client stands for many
	// clients, so nginx's per-client limits must not cut it.
	trustHost bool
	hostAddr  string // the host's address on the network, once known
	httpPort  int
	exporter  int
	workers   int
	log       io.Writer
}

func newStack(project, composeFile string, httpPort, httpsPort, exporterPort, workers int, log io.Writer) *stack {
	s := &stack{
		project:      project,
		composeFile:  composeFile,
		httpPort:     httpPort,
		exporter:     exporterPort,
		workers:      workers,
		baseURL:      fmt.Sprintf("http://127.0.0.1:%d", httpPort),
		publishedURL: fmt.Sprintf("http://127.0.0.1:%d", httpPort),
		log:          log,
		env: append(os.Environ(),
			// address:port publishes on loopback only.
			fmt.Sprintf("SUDOKU_HTTP_PORT=127.0.0.1:%d", httpPort),
			fmt.Sprintf("SUDOKU_HTTPS_PORT=127.0.0.1:%d", httpsPort),
			fmt.Sprintf("SUDOKU_EXPORTER_PORT=127.0.0.1:%d", exporterPort),
			"COMPOSE_DOCKER_CLI_BUILD=0", "DOCKER_BUILDKIT=0",
		),
	}
	if exec.Command("docker", "compose", "version").Run() == nil {
		s.compose = []string{"docker", "compose"}
	} else {
		s.compose = []string{"docker-compose"}
	}
	return s
}

// run runs a command, streaming its output to the log when stream is set,
// and returns its stdout.
func (s *stack) run(ctx context.Context, stream bool, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = s.env
	var out, errb bytes.Buffer
	if stream {
		cmd.Stdout = io.MultiWriter(&out, s.log)
		cmd.Stderr = io.MultiWriter(&errb, s.log)
	} else {
		cmd.Stdout = &out
		cmd.Stderr = &errb
	}
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("running %s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

func (s *stack) composeCmd(ctx context.Context, stream bool, args ...string) (string, error) {
	full := append([]string{}, s.compose[1:]...)
	full = append(full, "-p", s.project, "-f", s.composeFile)
	for _, f := range s.extraFiles {
		full = append(full, "-f", f)
	}
	full = append(full, args...)
	return s.run(ctx, stream, s.compose[0], full...)
}

func (s *stack) docker(ctx context.Context, args ...string) (string, error) {
	return s.run(ctx, false, "docker", args...)
}

// up builds and starts the stack, then waits until every container is
// healthy and a solve succeeds through nginx.
func (s *stack) up(ctx context.Context) error {
	s.down(ctx) // leftovers of an interrupted run
	if _, err := s.composeCmd(ctx, true, "build"); err != nil {
		return err
	}
	scale := fmt.Sprintf("sudoku=%d", s.workers)
	if s.trustHost {
		// Create the network first to learn the host's address on it.
		if _, err := s.composeCmd(ctx, true, "up", "--no-start", "--scale", scale); err != nil {
			return err
		}
		gw, err := s.gateway(ctx)
		if err != nil {
			return err
		}
		s.hostAddr = gw
		fmt.Fprintf(s.log, "  trusting the host's address %s on the compose network (SUDOKU_TRUSTED_CLIENTS)\n", gw)
		s.env = append(s.env, "SUDOKU_TRUSTED_CLIENTS="+gw)
	}
	if _, err := s.composeCmd(ctx, true, "up", "-d", "--scale", scale); err != nil {
		return err
	}
	return s.waitReady(ctx, 180*time.Second)
}

// hostAddress is the address nginx sees the host's connections come from.
func (s *stack) hostAddress(ctx context.Context) (string, error) {
	if s.hostAddr == "" {
		gw, err := s.gateway(ctx)
		if err != nil {
			return "", err
		}
		s.hostAddr = gw
	}
	return s.hostAddr, nil
}

// gateway returns the host's address on the project's network: the source
// address of every connection the host makes into it, through Docker's
// port proxy or directly.
func (s *stack) gateway(ctx context.Context) (string, error) {
	out, err := s.docker(ctx, "network", "ls", "-q", "--filter", "label=com.docker.compose.project="+s.project)
	if err != nil {
		return "", err
	}
	ids := strings.Fields(out)
	if len(ids) != 1 {
		return "", fmt.Errorf("want one network of project %s, found %d", s.project, len(ids))
	}
	out, err = s.docker(ctx, "network", "inspect", "-f", "{{range .IPAM.Config}}{{.Gateway}} {{end}}", ids[0])
	if err != nil {
		return "", err
	}
	for _, gw := range strings.Fields(out) {
		if !strings.Contains(gw, ":") { // the IPv4 gateway
			return gw, nil
		}
	}
	return "", fmt.Errorf("network %s has no IPv4 gateway", short(ids[0]))
}

// useDirect points baseURL at nginx's address on the compose network, so
// load bypasses Docker's userland port proxy (docker-proxy), which costs
// more CPU per request than nginx and the worker together and would cap
// the measured capacity at its own rate. The host reaches the compose
// bridge network directly; no port has to be published for it.
func (s *stack) useDirect(ctx context.Context) error {
	ids, err := s.containers(ctx, "nginx", false)
	if err != nil || len(ids) == 0 {
		return fmt.Errorf("finding nginx container: %v", err)
	}
	st, err := s.inspect(ctx, ids[0])
	if err != nil {
		return err
	}
	for _, n := range st[0].NetworkSettings.Networks {
		if n.IPAddress != "" {
			url := "http://" + n.IPAddress + ":8080"
			if st, _, _, err := getOnce(ctx, url+"/sudoku?puzzle="+testPuzzle, 2*time.Second); err != nil || st != 200 {
				return fmt.Errorf("nginx at %s: status %d, %v", url, st, err)
			}
			s.baseURL = url
			return nil
		}
	}
	return fmt.Errorf("nginx container has no network address")
}

func (s *stack) down(ctx context.Context) {
	if _, err := s.composeCmd(ctx, false, "down", "-v", "--remove-orphans", "-t", "5"); err != nil {
		fmt.Fprintf(s.log, "compose down: %v\n", err)
	}
}

// waitReady polls until all containers of the project are running and
// healthy (those that have a healthcheck) and a GET /sudoku answers 200.
func (s *stack) waitReady(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	last := ""
	for time.Now().Before(deadline) {
		ok, why := s.allHealthy(ctx)
		if ok {
			st, _, _, err := getOnce(ctx, s.baseURL+"/sudoku?puzzle="+testPuzzle, 2*time.Second)
			if err == nil && st == 200 {
				return nil
			}
			why = fmt.Sprintf("GET /sudoku: status %d err %v", st, err)
		}
		if why != last {
			fmt.Fprintf(s.log, "  waiting for stack: %s\n", why)
			last = why
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return fmt.Errorf("stack not ready after %v: %s", limit, last)
}

// containers lists the ids of the project's containers of a service
// (running or not when all is set).
func (s *stack) containers(ctx context.Context, service string, all bool) ([]string, error) {
	args := []string{"ps", "-q", "--no-trunc",
		"--filter", "label=com.docker.compose.project=" + s.project,
		"--filter", "label=com.docker.compose.service=" + service}
	if all {
		args = append(args, "-a")
	}
	out, err := s.docker(ctx, args...)
	if err != nil {
		return nil, err
	}
	ids := strings.Fields(out)
	return ids, nil
}

type containerState struct {
	ID    string
	Name  string
	State struct {
		Status     string
		Running    bool
		Paused     bool
		Pid        int
		ExitCode   int
		StartedAt  time.Time
		FinishedAt time.Time
		Health     *struct{ Status string }
	}
	RestartCount int
	Config       struct {
		Hostname string
		Env      []string
		Labels   map[string]string
	}
	Mounts []struct {
		Type, Name, Destination string
	}
	HostConfig struct {
		RestartPolicy  struct{ Name string }
		ReadonlyRootfs bool
	}
	NetworkSettings struct {
		Ports    map[string][]struct{ HostIP, HostPort string }
		Networks map[string]struct{ IPAddress string }
	}
}

func (s *stack) inspect(ctx context.Context, ids ...string) ([]containerState, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	out, err := s.docker(ctx, append([]string{"inspect"}, ids...)...)
	if err != nil {
		return nil, err
	}
	var st []containerState
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		return nil, fmt.Errorf("decoding docker inspect: %w", err)
	}
	return st, nil
}

func (s *stack) allHealthy(ctx context.Context) (bool, string) {
	var ids []string
	for _, svc := range []string{"nginx", "sudoku"} {
		c, err := s.containers(ctx, svc, true)
		if err != nil {
			return false, err.Error()
		}
		if svc == "sudoku" && len(c) < s.workers {
			return false, fmt.Sprintf("%d of %d workers exist", len(c), s.workers)
		}
		if len(c) == 0 {
			return false, "no " + svc + " container"
		}
		ids = append(ids, c...)
	}
	st, err := s.inspect(ctx, ids...)
	if err != nil {
		return false, err.Error()
	}
	for _, c := range st {
		if !c.State.Running || c.State.Paused {
			return false, fmt.Sprintf("%s is %s", c.Name, c.State.Status)
		}
		// nginx's and the exporter's health only gate start-up (their
		// exec-based checks time out now and then on a busy machine); the
		// GET below proves nginx serves. Workers must be healthy.
		if c.State.Health != nil && c.State.Health.Status != "healthy" && c.Config.Labels["com.docker.compose.service"] == "sudoku" {
			return false, fmt.Sprintf("%s is %s", c.Name, c.State.Health.Status)
		}
	}
	return true, ""
}

// waitHealthy waits until one container is running and healthy (or just
// running when it has no healthcheck).
func (s *stack) waitHealthy(ctx context.Context, id string, limit time.Duration) (time.Duration, error) {
	start := time.Now()
	for time.Since(start) < limit {
		st, err := s.inspect(ctx, id)
		if err == nil && len(st) == 1 {
			c := st[0]
			if c.State.Running && !c.State.Paused && (c.State.Health == nil || c.State.Health.Status == "healthy") {
				return time.Since(start), nil
			}
		}
		select {
		case <-ctx.Done():
			return time.Since(start), ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return time.Since(start), fmt.Errorf("container %s not healthy after %v", short(id), limit)
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// procRSS is one process of a container as docker top sees it.
type procRSS struct {
	PID int
	RSS int64 // bytes
	Cmd string
}

// top lists a container's processes with their resident set size.
func (s *stack) top(ctx context.Context, id string) ([]procRSS, error) {
	out, err := s.docker(ctx, "top", id, "-o", "pid,rss,args")
	if err != nil {
		return nil, err
	}
	var ps []procRSS
	for i, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if i == 0 {
			continue // header
		}
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		pid, _ := strconv.Atoi(f[0])
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		ps = append(ps, procRSS{PID: pid, RSS: kb * 1024, Cmd: strings.Join(f[2:], " ")})
	}
	return ps, nil
}

// hostRSS reads a process's resident set from /proc on this host (the
// containers share its kernel); it costs no docker call, so sampling works
// while the machine is saturated.
func hostRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) >= 1 {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				return kb * 1024, err
			}
		}
	}
	return 0, fmt.Errorf("no VmRSS for pid %d", pid)
}

// workerRSS is the resident set of the worker process in a worker container.
func (s *stack) workerRSS(ctx context.Context, id string) (int64, error) {
	if st, err := s.inspect(ctx, id); err == nil && len(st) == 1 && st[0].State.Pid > 0 {
		if v, err := hostRSS(st[0].State.Pid); err == nil {
			return v, nil
		}
	}
	ps, err := s.top(ctx, id)
	if err != nil {
		return 0, err
	}
	for _, p := range ps {
		if strings.Contains(p.Cmd, "sudoku-fcgi") {
			return p.RSS, nil
		}
	}
	if len(ps) == 1 {
		return ps[0].RSS, nil
	}
	return 0, fmt.Errorf("no sudoku-fcgi process in container %s", short(id))
}

// nginxWorkersRSS returns the largest resident set among nginx worker
// processes of the nginx container.
func (s *stack) nginxWorkersRSS(ctx context.Context, id string) (int64, error) {
	ps, err := s.top(ctx, id)
	if err != nil {
		return 0, err
	}
	var max int64
	found := false
	for _, p := range ps {
		if strings.Contains(p.Cmd, "nginx: worker process") {
			found = true
			if p.RSS > max {
				max = p.RSS
			}
		}
	}
	if !found {
		return 0, fmt.Errorf("no nginx worker process in container %s", short(id))
	}
	return max, nil
}

// networkName returns the compose network of the project (the one the
// nginx container is attached to).
func (s *stack) networkName(ctx context.Context) (string, error) {
	ids, err := s.containers(ctx, "nginx", false)
	if err != nil || len(ids) == 0 {
		return "", fmt.Errorf("finding nginx container: %v", err)
	}
	st, err := s.inspect(ctx, ids[0])
	if err != nil {
		return "", err
	}
	for name := range st[0].NetworkSettings.Networks {
		return name, nil
	}
	return "", fmt.Errorf("nginx container has no network")
}

// testPuzzle is line 1 of test1000.
const testPuzzle = "000000010400000000020000000000050407008000300001090000300400200050100000000806000"
