//go:build !amd64 || purego

package solver

// asmEngine is false: the assembly engine is not built (see close_amd64.go).
const asmEngine = false

func engineName() string { return "scalar" }

// closeWavesAsm is never called when asmEngine is false.
func closeWavesAsm(s *state, changed uint32, t *tables) bool { return s.closeWaves(changed) }
