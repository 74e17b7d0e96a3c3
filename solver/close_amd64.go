//go:build amd64 && !purego

package solver

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// asmEngine is true when the CPU runs close_amd64.s: BMI1 (ANDN), BMI2
// (PEXT) and AVX2.
var asmEngine = cpu.X86.HasBMI1 && cpu.X86.HasBMI2 && cpu.X86.HasAVX2

func engineName() string {
	if asmEngine {
		return "asm-avx2"
	}
	return "scalar"
}

// closeAndPlaceAsm is s.closeAndPlace(changed) in assembly; t is tab.
//
//go:noescape
func closeAndPlaceAsm(s *state, changed uint32, t *tables) (ok bool)

// forcedAllAsm is p.forcedAll(f) in assembly (AVX2).
//
//go:noescape
func forcedAllAsm(p *patterns, f *[9]uint64) (only, full uint64, todo uint32, ok bool)

// permCountsAsm is p.permCounts(c) in assembly (AVX2).
//
//go:noescape
func permCountsAsm(p *patterns, c *[9]uint64) (tot uint64)

// close_amd64.s reads the tables and the state at these offsets.
var (
	_ = [1]int{}[unsafe.Offsetof(tables{}.perm)-512]
	_ = [1]int{}[unsafe.Offsetof(tables{}.bandKeep)-1536]
	_ = [1]int{}[unsafe.Offsetof(tables{}.peers)-6656]
	_ = [1]int{}[unsafe.Offsetof(tables{}.colMask)-11372]
	_ = [1]int{}[unsafe.Offsetof(state{}.unsolved)-108]
	_ = [1]int{}[unsafe.Offsetof(state{}.pat)-120]
)
