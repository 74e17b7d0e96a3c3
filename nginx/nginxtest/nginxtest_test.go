package nginxtest

import "testing"

// A port FreePort gave stays reserved: another test process (here another
// lock on the same file) cannot take it.
func TestFreePortReserves(t *testing.T) {
	p := FreePort(t)
	if reserve(p) {
		t.Errorf("port %d reserved again after FreePort gave it", p)
	}
}
