package suite

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// nginxMasterKill (issue 31, "Nothing lost"): SIGKILL of nginx's master
// under 0.5 C. sudoku-edge holds the listening sockets and starts a new
// master on them, so nothing is refused or fails and the container neither
// exits nor restarts; the worst latency within 1 s is a bound.
func nginxMasterKill(ctx context.Context, s *suite) result {
	var c checks
	ng := s.nginxID(ctx)
	if ng == "" {
		return c.abort(fmt.Errorf("no nginx container"))
	}
	before, err := s.st.inspect(ctx, ng)
	if err != nil || len(before) != 1 {
		return c.abort(fmt.Errorf("inspecting the nginx container: %v", err))
	}
	stop := s.background(ctx, "nginx-kill", s.half(), 5*time.Minute)
	sleep(ctx, 2*time.Second)
	var errs []string
	killed := 0
	for range 3 {
		// The master's pid file; kill is the shell's builtin (no procps in the image).
		if _, err := s.st.docker(ctx, "exec", ng, "sh", "-c", "kill -9 $(cat /run/sudoku-edge/nginx.pid)"); err != nil {
			errs = append(errs, err.Error())
		} else {
			killed++
		}
		sleep(ctx, 3*time.Second) // the pid file names the new master once it has started
	}
	res := stop()
	sum := summarize(res.Records, 0)
	after, err := s.st.inspect(ctx, ng)
	restarts, running := -1, false
	if err == nil && len(after) == 1 {
		restarts, running = after[0].RestartCount-before[0].RestartCount, after[0].State.Running
	}
	c.fig("%d/3 masters killed; %d requests at %.0f/s, refused %d, failed %d (%s); container restarts %d",
		killed, sum.Sent, s.half(), sum.Kinds[kindRefused], sum.failures(), sum.kindsString(), restarts)
	c.want(killed == 3, "killing the master failed: %s", strings.Join(errs, "; "))
	c.want(sum.Kinds[kindRefused] == 0 && sum.failures() == 0, "%d refused, %d failed requests: %s", sum.Kinds[kindRefused], sum.failures(), sum.kindsString())
	c.bound(sum.Max <= time.Second, "<= 1s", s.capRef(), "max latency %s", ms(sum.Max))
	c.want(running && restarts == 0, "the nginx container restarted (%d) or stopped (running %v): sudoku-edge must restart nginx itself", restarts, running)
	return c.result()
}
