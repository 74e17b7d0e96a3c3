// Command fcgiabuse abuses a FastCGI worker port with malformed and
// resource-hungry record streams. The reliability suite runs it inside the
// compose network (worker ports are never published), against one worker
// address, for a bounded time:
//
//	fcgiabuse -target 172.18.0.3:9000 -duration 20s
//
// Attacks, all at once: connections that send BEGIN_REQUEST and a PARAMS
// record that never ends; one connection sending BEGIN_REQUESTs for every
// request id without STDIN; oversize records (claimed 64 KiB bodies, a
// 2 GiB param length, endless STDIN); a connection flood; and random bytes.
// It prints one JSON line of counts at the end and one progress line per
// second to stderr.
package main

import (
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

const (
	typeBeginRequest = 1
	typeAbortRequest = 2
	typeParams       = 4
	typeStdin        = 5
	roleResponder    = 1
)

func header(typ uint8, id uint16, contentLen int, padding uint8) []byte {
	h := make([]byte, 8)
	h[0] = 1 // version
	h[1] = typ
	binary.BigEndian.PutUint16(h[2:], id)
	binary.BigEndian.PutUint16(h[4:], uint16(contentLen))
	h[6] = padding
	return h
}

func record(typ uint8, id uint16, content []byte) []byte {
	return append(header(typ, id, len(content), 0), content...)
}

func begin(id uint16, keepConn bool) []byte {
	body := make([]byte, 8)
	binary.BigEndian.PutUint16(body, roleResponder)
	if keepConn {
		body[2] = 1
	}
	return record(typeBeginRequest, id, body)
}

// param encodes one name-value pair with 1- or 4-byte lengths.
func param(name, value string) []byte {
	var b []byte
	for _, s := range []string{name, value} {
		if len(s) < 128 {
			b = append(b, byte(len(s)))
		} else {
			var l [4]byte
			binary.BigEndian.PutUint32(l[:], uint32(len(s))|1<<31)
			b = append(b, l[:]...)
		}
	}
	return append(append(b, name...), value...)
}

type counters struct {
	Conns       atomic.Int64 `json:"-"`
	DialErrors  atomic.Int64 `json:"-"`
	BytesSent   atomic.Int64 `json:"-"`
	ClosedByPee atomic.Int64 `json:"-"`
	Begins      atomic.Int64 `json:"-"`
}

func main() {
	target := flag.String("target", "sudoku:9000", "worker FastCGI address (inside the compose network only)")
	duration := flag.Duration("duration", 20*time.Second, "how long to attack")
	hold := flag.Int("hold", 300, "connections held open with unterminated params")
	flood := flag.Int("flood", 1000, "connections in the connection flood")
	flag.Parse()

	var c counters
	deadline := time.Now().Add(*duration)
	dial := func() net.Conn {
		conn, err := net.DialTimeout("tcp", *target, 2*time.Second)
		if err != nil {
			c.DialErrors.Add(1)
			return nil
		}
		c.Conns.Add(1)
		conn.SetDeadline(deadline.Add(time.Second))
		return conn
	}
	write := func(conn net.Conn, b []byte) bool {
		n, err := conn.Write(b)
		c.BytesSent.Add(int64(n))
		if err != nil {
			c.ClosedByPee.Add(1)
			return false
		}
		return true
	}
	var wg sync.WaitGroup
	var held []net.Conn
	var heldMu sync.Mutex
	keep := func(conn net.Conn) {
		heldMu.Lock()
		held = append(held, conn)
		heldMu.Unlock()
	}
	// Drain whatever the worker sends, so it never blocks on us.
	drain := func(conn net.Conn) { go io.Copy(io.Discard, conn) }

	attack := func(name string, f func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f()
		}()
		_ = name
	}

	// 1. Unterminated params: BEGIN_REQUEST + a PARAMS record that claims
	// more bytes than it sends, held open.
	attack("unterminated-params", func() {
		for i := 0; i < *hold && time.Now().Before(deadline); i++ {
			conn := dial()
			if conn == nil {
				continue
			}
			drain(conn)
			p := param("REQUEST_METHOD", "GET")
			msg := append(begin(1, true), header(typeParams, 1, 60000, 0)...)
			msg = append(msg, p...)
			if write(conn, msg) {
				keep(conn)
			}
		}
	})
	// 2. Many BEGIN_REQUESTs (with complete params) and never any STDIN,
	// over every request id, on a few connections.
	for k := 0; k < 4; k++ {
		attack("begin-no-stdin", func() {
			conn := dial()
			if conn == nil {
				return
			}
			drain(conn)
			params := append(param("REQUEST_METHOD", "GET"), param("SCRIPT_NAME", "/sudoku")...)
			params = append(params, param("QUERY_STRING", "puzzle=1")...)
			for id := 1; time.Now().Before(deadline); id++ {
				rid := uint16(id%65535 + 1)
				msg := append(begin(rid, true), record(typeParams, rid, params)...)
				msg = append(msg, record(typeParams, rid, nil)...)
				if !write(conn, msg) {
					conn = dial()
					if conn == nil {
						return
					}
					drain(conn)
				}
				c.Begins.Add(1)
			}
		})
	}
	// 3. Oversize records: a 2 GiB param length, max-size padded records,
	// endless STDIN for one request.
	attack("oversize", func() {
		for time.Now().Before(deadline) {
			conn := dial()
			if conn == nil {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			drain(conn)
			var huge [8]byte
			binary.BigEndian.PutUint32(huge[0:], 0x7fffffff|1<<31)
			binary.BigEndian.PutUint32(huge[4:], 0x7fffffff|1<<31)
			big := make([]byte, 65535)
			for i := range big {
				big[i] = 'A'
			}
			msg := append(begin(7, true), header(typeParams, 7, 65535, 255)...)
			msg = append(msg, huge[:]...)
			msg = append(msg, big[8:]...)
			msg = append(msg, make([]byte, 255)...)
			if !write(conn, msg) {
				conn.Close()
				continue
			}
			// Endless STDIN on another request id.
			write(conn, append(begin(8, true), record(typeParams, 8, nil)...))
			for time.Now().Before(deadline) {
				if !write(conn, record(typeStdin, 8, big)) {
					break
				}
			}
			conn.Close()
		}
	})
	// 4. Connection flood: many idle connections.
	attack("flood", func() {
		for i := 0; i < *flood && time.Now().Before(deadline); i++ {
			if conn := dial(); conn != nil {
				drain(conn)
				keep(conn)
			}
		}
	})
	// 5. Garbage: random bytes, bad versions, unknown types, aborts for
	// unknown ids.
	attack("garbage", func() {
		r := rand.New(rand.NewPCG(1, 2))
		for time.Now().Before(deadline) {
			conn := dial()
			if conn == nil {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			drain(conn)
			var msg []byte
			switch r.IntN(4) {
			case 0:
				msg = make([]byte, 1+r.IntN(4096))
				for i := range msg {
					msg[i] = byte(r.IntN(256))
				}
			case 1:
				msg = header(typeBeginRequest, 1, 8, 0)
				msg[0] = 9 // bad version
				msg = append(msg, make([]byte, 8)...)
			case 2:
				msg = record(200, 1, []byte("unknown type"))
			default:
				msg = record(typeAbortRequest, uint16(r.IntN(65535)), nil)
			}
			write(conn, msg)
			time.Sleep(5 * time.Millisecond)
			conn.Close()
		}
	})

	done := make(chan struct{})
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				heldMu.Lock()
				h := len(held)
				heldMu.Unlock()
				fmt.Fprintf(os.Stderr, "fcgiabuse %s: conns %d (held %d), dial errors %d, sent %d MiB, begins %d, closed by worker %d\n",
					*target, c.Conns.Load(), h, c.DialErrors.Load(), c.BytesSent.Load()>>20, c.Begins.Load(), c.ClosedByPee.Load())
			}
		}
	}()
	wg.Wait()
	time.Sleep(time.Until(deadline))
	close(done)
	heldMu.Lock()
	for _, conn := range held {
		conn.Close()
	}
	heldMu.Unlock()
	json.NewEncoder(os.Stdout).Encode(map[string]int64{
		"conns": c.Conns.Load(), "dial_errors": c.DialErrors.Load(), "bytes_sent": c.BytesSent.Load(),
		"begins": c.Begins.Load(), "closed_by_worker": c.ClosedByPee.Load(), "held": int64(len(held)),
	})
}
