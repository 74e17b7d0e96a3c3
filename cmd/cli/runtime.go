package cli

import (
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// Runtime is how a server command sets the Go runtime up and batches its
// logs: the garbage collector's target, the soft memory limit, and how long
// log lines wait in LogWriter. sudoku-fcgi takes its flags, and so does
// make bench-path's anchor, so that the two run alike.
type Runtime struct {
	GCPercent   int           // debug.SetGCPercent; 0 keeps GOGC or the runtime default
	MemoryLimit ByteSize      // debug.SetMemoryLimit; 0 sets none
	LogFlush    time.Duration // LogWriter's batch; 0 writes each line at once
}

// DefaultRuntime is the worker's runtime: a GC target of 400% with a 48 MiB
// soft limit, which caps the garbage that piles up when many connections
// open at once far above the live memory (tests/bench/HISTORY.md), and log
// lines written every 100 ms.
func DefaultRuntime() Runtime {
	return Runtime{GCPercent: 400, MemoryLimit: 48 << 20, LogFlush: 100 * time.Millisecond}
}

// AddFlags registers -gc-percent, -memory-limit and -log-flush on fs, with
// r's values as their defaults.
func (r *Runtime) AddFlags(fs *FlagSet) {
	fs.IntVar(&r.GCPercent, "gc-percent", r.GCPercent, "GC target percentage (debug.SetGCPercent); 0 keeps GOGC or the runtime default")
	fs.Var(&r.MemoryLimit, "memory-limit", "the Go runtime's soft memory `limit` (debug.SetMemoryLimit), as GOMEMLIMIT writes it (48MiB, 1GiB); with -gc-percent 400 it caps the garbage that piles up when many connections open at once, far above the live memory; 0 sets none, and GOMEMLIMIT wins when set")
	fs.DurationVar(&r.LogFlush, "log-flush", r.LogFlush, "buffer log lines up to this long (0: write each line at once)")
}

// Check rejects a negative GC target or log batch.
func (r Runtime) Check() error {
	if r.GCPercent < 0 || r.LogFlush < 0 {
		return errors.New("-gc-percent and -log-flush must be >= 0")
	}
	return nil
}

// Apply sets the GC target and the memory limit, each unless its
// environment variable (GOGC, GOMEMLIMIT) is set: the runtime has read
// that already, and an operator's variable wins. It returns GOGC's value.
func (r Runtime) Apply(lookupEnv func(string) (string, bool)) (gogc string) {
	gogc, _ = lookupEnv("GOGC") // the runtime reads an empty GOGC as unset
	if r.GCPercent > 0 && gogc == "" {
		debug.SetGCPercent(r.GCPercent)
	}
	if gomemlimit, _ := lookupEnv("GOMEMLIMIT"); r.MemoryLimit > 0 && gomemlimit == "" {
		debug.SetMemoryLimit(int64(r.MemoryLimit))
	}
	return gogc
}

// ByteSize is a flag.Value for a size in bytes as GOMEMLIMIT writes it: a
// number with an optional unit B, KiB, MiB, GiB or TiB.
type ByteSize int64

func (b *ByteSize) String() string {
	if b == nil {
		return "0"
	}
	n := int64(*b)
	for _, u := range []string{"TiB", "GiB", "MiB", "KiB"} {
		unit := byteUnits[u]
		if n != 0 && n%unit == 0 {
			return strconv.FormatInt(n/unit, 10) + u
		}
	}
	return strconv.FormatInt(n, 10)
}

var byteUnits = map[string]int64{"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}

// Set parses s, such as 48MiB.
func (b *ByteSize) Set(s string) error {
	num, unit := s, "B"
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB", "B"} {
		if n, ok := strings.CutSuffix(s, u); ok {
			num, unit = n, u
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/byteUnits[unit] {
		return fmt.Errorf("%q: want a size such as 48MiB (units B, KiB, MiB, GiB, TiB)", s)
	}
	*b = ByteSize(n * byteUnits[unit])
	return nil
}
