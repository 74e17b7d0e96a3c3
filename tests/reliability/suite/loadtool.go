package suite

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
)

// runLoad runs sudoku-load with -json, streaming its progress (stderr) to
// the suite's output, and returns the decoded JSON result.
func (s *suite) runLoad(ctx context.Context, args ...string) (flat, error) {
	args = append(args, "-json", "-log-console")
	fmt.Fprintf(s.out, "    $ %s %s\n", s.cfg.LoadBin, strings.Join(args, " "))
	out, err := s.runEchoingStderr(exec.CommandContext(ctx, s.cfg.LoadBin, args...))
	return loadOutput(out, err, s.out)
}

// runLoadFrom runs sudoku-load in a throwaway container on the project's
// network, so its connections come from an address of their own, not the
// host's (which the suite trusts): nginx sees a separate client. The
// puzzle file is /puzzles inside; nginx is http://nginx:8080.
func (s *suite) runLoadFrom(ctx context.Context, name string, args ...string) (flat, error) {
	network, err := s.st.networkName(ctx)
	if err != nil {
		return nil, err
	}
	bin, err := filepath.Abs(s.cfg.LoadBin)
	if err != nil {
		return nil, err
	}
	puzzles, err := filepath.Abs(s.cfg.Puzzles)
	if err != nil {
		return nil, err
	}
	full := s.throwaway(name, network, []string{bin + ":/sudoku-load", puzzles + ":/puzzles"},
		append([]string{"/sudoku-load"}, args...)...)
	full = append(full, "-json", "-log-console")
	fmt.Fprintf(s.out, "    $ docker %s\n", strings.Join(full, " "))
	out, err := s.runEchoingStderr(exec.CommandContext(ctx, "docker", full...))
	return loadOutput(out, err, s.out)
}

// loadOutput decodes sudoku-load's -json output.
func loadOutput(out []byte, err error, log io.Writer) (flat, error) {
	// The JSON object is the last thing on stdout.
	if i := strings.IndexByte(string(out), '{'); i >= 0 {
		out = out[i:]
	}
	var v map[string]any
	if jerr := json.Unmarshal(out, &v); jerr != nil {
		if err != nil {
			return nil, fmt.Errorf("sudoku-load: %w", err)
		}
		return nil, fmt.Errorf("decoding sudoku-load -json output: %w (%.200s)", jerr, out)
	}
	f := flat{}
	flatten("", v, f)
	if err != nil {
		// sudoku-load exits non-zero when it saw errors; the JSON still
		// holds the figures.
		fmt.Fprintf(log, "    sudoku-load exited: %v\n", err)
	}
	return f, nil
}

// capacity runs `sudoku-load capacity` and returns C in requests/s: the
// highest rate whose p99 stays within the SLO, each rate judged by the
// majority of three 3 s steps, so that one step spoiled by the machine's
// scheduler neither passes nor fails it. The search runs between a fifth
// and 1.2 x the saturation with 32 in flight when that is known.
func (s *suite) capacity(ctx context.Context) (float64, error) {
	fmt.Fprintf(s.out, "== capacity (sudoku-load capacity, p99 <= %v, the majority of 3 steps)\n", s.cfg.SLO)
	args := []string{"capacity", "-url", s.st.baseURL, "-in", s.cfg.Puzzles, "-p99", s.cfg.SLO.String(),
		"-repeat", "3", "-retries", "0", "-duration", "3s", "-c", "256", "-cores", fmt.Sprint(s.stackCores())}
	if sat := s.ref.sat32; sat > 0 {
		args = append(args, "-rate", fmt.Sprintf("%.0f", sat/2), "-min-rate", fmt.Sprintf("%.0f", sat/5),
			"-max-rate", fmt.Sprintf("%.0f", 1.2*sat))
	}
	f, err := s.runLoad(ctx, args...)
	if err != nil {
		return 0, err
	}
	c, ok := f.num("capacity.rate")
	if !ok || c <= 0 {
		return 0, fmt.Errorf("no rate kept p99 <= %v (load average %s)", s.cfg.SLO, loadAvg())
	}
	s.sloUsed = s.cfg.SLO
	fmt.Fprintf(s.out, "== capacity C = %.0f req/s at p99 <= %v\n", c, s.cfg.SLO)
	return c, nil
}

// kindsOf returns the error counts of a sudoku-load result, by kind.
func kindsOf(f flat) map[string]float64 {
	m := map[string]float64{}
	for k, v := range f {
		if strings.HasPrefix(k, "errors.") {
			if x, ok := v.(float64); ok && x > 0 {
				m[strings.TrimPrefix(k, "errors.")] = x
			}
		}
	}
	return m
}

// runEchoingStderr runs cmd, echoes its stderr (progress lines) into the
// suite's output as it comes, and returns its stdout.
func (s *suite) runEchoingStderr(cmd *exec.Cmd) ([]byte, error) {
	var stdout strings.Builder
	cmd.Stdout = &stdout
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			fmt.Fprintf(s.out, "    | %s\n", sc.Text())
		}
		io.Copy(io.Discard, pr) // a line too long for the scanner must not block the command
	}()
	err := cmd.Run()
	pw.Close()
	<-done
	return []byte(stdout.String()), err
}
