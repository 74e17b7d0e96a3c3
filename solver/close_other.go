//go:build !amd64 || purego

package solver

// asmEngine is false: the assembly engine is not built (see close_amd64.go).
const asmEngine = false

func engineName() string { return "scalar" }

// closeDigitAsm is never called when asmEngine is false.
func closeDigitAsm(s *state, d int, t *tables) (uint32, bool) { return s.closeDigit(d) }
