//go:build !goexperiment.simd || !amd64 || purego

package solver

// vecEngine is false: the vector engine is not built (see simd_amd64.go).
const vecEngine = false

func engineName() string { return "scalar" }

// propagateVec is never called when vecEngine is false.
func (s *state) propagateVec(changed uint32) bool { return s.propagate(changed) }
