package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"

	"sudoku-fcgi/cmd/cli"
	"sudoku-fcgi/solver"
)

const solveSummary = `sudoku solve [flags] [FILE...] solves puzzles, one per line, from each FILE
in turn or from standard input when there is none. A line is 81 cells in
row-major order ('1'-'9' givens, '0' or '.' blanks), optionally after an
"id:" prefix (the id ends at the line's last ':', so it may hold ':').
Blank lines and lines starting with '#' are skipped.

One line is written per puzzle, in input order, with the same prefix:
  [id:]<81 digits>        the (first) solution
  [id:]NoSolution         the puzzle has no solution
  [id:]error: <message>   the line is not a puzzle (the run goes on)
With -unique a solution line ends in " unique" or " not-unique"; the
format and its words are the batch API's (POST /sudoku).
The exit status is 0 when every line was handled, 1 on an I/O error and
2 on a bad flag or environment variable.`

const solveExample = `
Example:
  $ printf 'a:000000010400000000020000000000050407008000300001090000300400200050100000000806000\nb:12\n' | sudoku solve -unique
  a:693784512487512936125963874932651487568247391741398625319475268856129743274836159 unique
  b:error: got 2 cells, want 81
`

// maxLine bounds a line: a puzzle is 81 cells, so anything this long is an
// error message, not a reason to buffer more.
const maxLine = 4096

type solveConfig struct {
	unique bool
	jobs   int
}

func runSolve(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdin io.Reader, stdout io.Writer) error {
	fs := cli.NewFlagSet("sudoku solve", solveSummary, stdout)
	fs.Engine = solver.Engine()
	flagsUsage := fs.Usage
	fs.Usage = func() {
		flagsUsage()
		fmt.Fprint(stdout, solveExample)
	}
	var cfg solveConfig
	fs.BoolVar(&cfg.unique, "unique", false, "also prove each solution unique")
	fs.IntVar(&cfg.jobs, "jobs", runtime.GOMAXPROCS(0), "solve on `N` goroutines; output stays in input order")
	files, err := fs.ParseFiles(args, lookupEnv)
	if errors.Is(err, flag.ErrHelp) {
		return nil // -help or -version, printed: nothing else to do
	}
	if err != nil {
		return err
	}
	if cfg.jobs < 1 {
		return &cli.UsageError{Err: fmt.Errorf("-jobs %d: want at least 1", cfg.jobs)}
	}

	w := bufio.NewWriterSize(stdout, 64<<10)
	s := newSolver(cfg)
	if len(files) == 0 {
		if err := s.stream(ctx, stdin, w); err != nil {
			return fmt.Errorf("reading standard input: %w", err)
		}
		return w.Flush()
	}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			w.Flush()
			return err
		}
		err = s.stream(ctx, f, w)
		f.Close()
		if err != nil {
			w.Flush()
			return fmt.Errorf("reading %s: %w", name, err)
		}
	}
	return w.Flush()
}

// batchSize is how many lines are read ahead and solved together.
const batchSize = 256

type lineSolver struct {
	cfg   solveConfig
	limit int
	in    [][]byte // lines of the current batch (copies; nil: too long)
	out   [][]byte // their answers, without the newline
}

func newSolver(cfg solveConfig) *lineSolver {
	s := &lineSolver{cfg: cfg, limit: 1}
	if cfg.unique {
		s.limit = 2
	}
	return s
}

// stream answers every puzzle line of r. It reads a batch while input is
// already buffered, solves it (on cfg.jobs goroutines), writes the answers
// in order, and flushes w whenever it would otherwise wait for input (no
// whole line buffered), so a pipe sees each answer as soon as its line is in.
func (s *lineSolver) stream(ctx context.Context, r io.Reader, w *bufio.Writer) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		s.in = s.in[:0]
		var readErr error
		for len(s.in) < batchSize {
			line, tooLong, err := readLine(br)
			if tooLong {
				s.in = append(s.in, nil) // answered with an error
			} else if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
				s.in = append(s.in, append([]byte(nil), line...))
			}
			if err != nil {
				readErr = err
				break
			}
			if !lineReady(br) {
				break // solve what we have before blocking on input
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		s.solveBatch()
		for _, a := range s.out {
			w.Write(a)
			w.WriteByte('\n')
		}
		if readErr == io.EOF {
			return nil
		}
		if readErr != nil {
			return readErr
		}
		if !lineReady(br) {
			if err := w.Flush(); err != nil {
				return err
			}
		}
	}
}

// lineReady reports whether a whole line is already buffered, so that the
// next readLine will not wait for input. The search stops at the first
// newline, within a line's length.
func lineReady(br *bufio.Reader) bool {
	b, _ := br.Peek(br.Buffered())
	return bytes.IndexByte(b, '\n') >= 0
}

// readLine returns the next line without its newline. A line longer than
// maxLine is skipped to its end and reported as tooLong instead.
func readLine(br *bufio.Reader) (line []byte, tooLong bool, err error) {
	line, err = br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) || len(line) > maxLine {
		for errors.Is(err, bufio.ErrBufferFull) {
			_, err = br.ReadSlice('\n')
		}
		return nil, true, err
	}
	return bytes.TrimSuffix(line, []byte("\n")), false, err
}

func (s *lineSolver) solveBatch() {
	n := len(s.in)
	if cap(s.out) < n {
		s.out = make([][]byte, n)
	}
	s.out = s.out[:n]
	jobs := min(s.cfg.jobs, n)
	if jobs <= 1 {
		for i := range n {
			s.out[i] = s.answer(s.out[i][:0], s.in[i])
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range jobs {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				s.out[i] = s.answer(s.out[i][:0], s.in[i])
			}
		})
	}
	wg.Wait()
}

// answer appends the output line for one input line to dst.
func (s *lineSolver) answer(dst, line []byte) []byte {
	if line == nil {
		return solver.AppendError(dst, fmt.Sprintf("line longer than %d bytes", maxLine))
	}
	id, cells, hasID := solver.SplitLine(bytes.TrimSpace(line))
	dst = solver.AppendID(dst, id, hasID)
	g, err := solver.Parse(string(cells))
	if err != nil {
		return solver.AppendError(dst, err.Error())
	}
	r := solver.Solve(g, s.limit)
	if r.Count == 0 {
		return append(dst, solver.AnswerNoSolution...)
	}
	return solver.AppendSolution(dst, &r.Solution, s.cfg.unique, r.Count)
}
