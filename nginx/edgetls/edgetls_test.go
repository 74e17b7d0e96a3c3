package edgetls

import "testing"

func TestDialAddr(t *testing.T) {
	for in, want := range map[string]string{
		"8080": "127.0.0.1:8080", "*:8080": "127.0.0.1:8080", "0.0.0.0:8080": "127.0.0.1:8080",
		"127.0.0.1:28080": "127.0.0.1:28080", "[::]:8080": "[::1]:8080",
	} {
		if got := dialAddr(in); got != want {
			t.Errorf("dialAddr(%q) = %q, want %q", in, got, want)
		}
	}
}
