package suite

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
)

// CPU isolation: the load and the stack on separate cores.
//
// The suite's load client shares the machine with the stack it measures;
// sharing every core, the client cannot offer 3 C and what it spends comes
// out of the stack's goodput (figures: tests/reliability/README.md). With
// -isolate the suite, every process it starts and its attackers'
// containers run on CPU 0, and the stack's containers (workers, nginx,
// exporter) on the others, so that C and every figure after it are the
// stack's own, and the load is never short of CPU.
// dockerd and containerd still run where the kernel puts them.

// loadCPU is the core of the suite, everything it starts and its attackers.
const loadCPU = "0"

// isolation is the CPU split: the stack has cores 1 to stackN; zero when
// off.
type isolation struct{ stackN int }

// stackCPUs is the stack's cpuset, "1" or "1-3".
func (iso isolation) stackCPUs() string {
	if iso.stackN == 1 {
		return "1"
	}
	return fmt.Sprintf("1-%d", iso.stackN)
}

// envStackN carries the split into the re-executed program.
const envStackN = "RELIABILITY_STACK_NCPU"

// isolate pins this process to loadCPU and returns the split. The first
// call re-executes the program under taskset (which pins every thread, and
// every process it starts, from the start) and does not return; in the
// re-executed program it reads the split from the environment. It returns
// a zero isolation when the machine has a single core.
func isolate() (isolation, error) {
	if v := os.Getenv(envStackN); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return isolation{}, fmt.Errorf("%s=%q: want a count of cores", envStackN, v)
		}
		return isolation{stackN: n}, nil
	}
	n := runtime.NumCPU()
	if n < 2 {
		return isolation{}, nil
	}
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		return isolation{}, fmt.Errorf("-isolate needs taskset (util-linux): %w", err)
	}
	self, err := os.Executable()
	if err != nil {
		return isolation{}, err
	}
	os.Setenv(envStackN, strconv.Itoa(n-1))
	args := append([]string{"taskset", "-c", loadCPU, self}, os.Args[1:]...)
	return isolation{}, syscall.Exec(taskset, args, os.Environ())
}

// composeOverride writes a compose file that puts the stack's services on
// the stack's cores and returns its path.
func (iso isolation) composeOverride(project string) (string, error) {
	return writeOverride(project, "isolate", fmt.Sprintf(`  sudoku:
    cpuset: %[1]q
  nginx:
    cpuset: %[1]q
  exporter:
    cpuset: %[1]q
`, iso.stackCPUs()))
}
