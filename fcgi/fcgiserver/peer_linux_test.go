package fcgiserver

import (
	"net"
	"os"
	"testing"

	"sudoku-fcgi/fcgi/fcgitest"
)

func TestPeerOfUnixConn(t *testing.T) {
	ln, sock := fcgitest.ListenUnix(t)
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
