package proc

import "testing"

// TestInheritEnv: nginx splits NGINX at ';' and reads a number before
// each one, so the last fd needs its separator too.
func TestInheritEnv(t *testing.T) {
	if got := inheritEnv(3); got != "NGINX=3;4;5;" {
		t.Errorf("inheritEnv(3) = %q, want NGINX=3;4;5;", got)
	}
}
