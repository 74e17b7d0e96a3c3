//go:build !amd64 || purego

package solver

// asmEngine is false: the assembly engine is not built (see close_amd64.go).
const asmEngine = false

func engineName() string { return "scalar" }

// closeAndPlaceAsm is never called when asmEngine is false.
func closeAndPlaceAsm(s *state, changed uint32, t *tables) bool { return s.closeAndPlace(changed) }

// forcedAllAsm is never called when asmEngine is false.
func forcedAllAsm(p *patterns, f *[9]uint64) (only, full uint64, todo uint32, ok bool) {
	return p.forcedAll(f)
}

// permCountsAsm is never called when asmEngine is false.
func permCountsAsm(p *patterns, c *[9]uint64) (tot uint64) { return p.permCounts(c) }
