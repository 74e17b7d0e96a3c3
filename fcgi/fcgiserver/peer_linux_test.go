package fcgiserver

import (
	"net"
	"os"
	"testing"
)

func TestPeerOfUnixConn(t *testing.T) {
	sock := t.TempDir() + "/p.sock"
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	want := peer{uid: uint32(os.Getuid()), unix: true}
	if got := peerOf(server); got != want || !got.valid() {
		t.Errorf("peerOf(unix conn) = %+v, want %+v", got, want)
	}
}
