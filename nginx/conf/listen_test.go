package conf

import (
	"net/netip"
	"slices"
	"testing"
)

func TestParseListen(t *testing.T) {
	got, err := ParseListen([]string{"8080", "*:8082", "127.0.0.1:28080", "[::]:8443", "[::1]:9"})
	want := []netip.AddrPort{
		netip.MustParseAddrPort("0.0.0.0:8080"), netip.MustParseAddrPort("0.0.0.0:8082"),
		netip.MustParseAddrPort("127.0.0.1:28080"), netip.MustParseAddrPort("[::]:8443"), netip.MustParseAddrPort("[::1]:9"),
	}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("ParseListen = %v, %v; want %v", got, err, want)
	}
	for _, bad := range []string{"0", "70000", "localhost:8080", "x", "127.0.0.1:", "[::1]"} {
		if got, err := ParseListen([]string{bad}); err == nil {
			t.Errorf("ParseListen(%q) = %v, want an error", bad, got)
		}
	}
}
