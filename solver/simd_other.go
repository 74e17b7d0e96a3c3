//go:build !goexperiment.simd || !amd64 || purego

package solver

// vecEngine is false: the vector engine is not built (see simd_amd64.go).
const vecEngine = false

func engineName() string { return "scalar" }

// closeVec is never called when vecEngine is false.
func (s *state) closeVec(changed uint32) bool { return s.closeWaves(changed) }
