package cli

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

func TestServeHTTP(t *testing.T) {
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := free.Addr().String()
	free.Close()
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	srv, err := ServeHTTP(zerolog.Nop(), "test listener", addr, h)
	if err != nil {
		t.Fatalf("ServeHTTP(%s): %v", addr, err)
	}
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		t.Fatalf("GET: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "ok" {
		t.Errorf("GET / = %q, want ok", b)
	}
	if _, err := ServeHTTP(zerolog.Nop(), "second listener", addr, h); err == nil || !strings.HasPrefix(err.Error(), "second listener: ") {
		t.Errorf("ServeHTTP on a busy address = %v, want an error that starts with its name", err)
	}
	srv.Close()
	if resp, err := http.Get("http://" + addr + "/"); err == nil {
		resp.Body.Close()
		t.Error("GET after Close succeeded, want the listener closed")
	}
}
