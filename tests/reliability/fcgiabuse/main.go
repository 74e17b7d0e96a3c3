// Command fcgiabuse abuses a FastCGI worker listener with malformed and
// resource-hungry record streams. The reliability suite runs it inside the
// compose network (worker ports are never published), against one worker
// address, a host:port or unix:<socket path> on the shared volume, for a
// bounded time:
//
//	fcgiabuse -target 172.18.0.3:9000 -duration 20s
//	fcgiabuse -target unix:/run/sudoku-fcgi/3f2a9c1b77d0.sock -duration 20s
//
// Attacks, all at once: connections that send BEGIN_REQUEST and a PARAMS
// record that never ends; one connection sending BEGIN_REQUESTs for every
// request id without STDIN; oversize records (claimed 64 KiB bodies, a
// 2 GiB param length, endless STDIN); a connection flood; and random bytes.
// It prints one JSON line of counts at the end and one progress line per
// second to stderr.
package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"sudoku-fcgi/cmd/cli"
	"sudoku-fcgi/fcgi/fcgitest"
)

const summary = `Abuses one FastCGI worker address with malformed and resource-hungry
record streams for -duration, then prints its counts as one JSON line.`

func main() { cli.Main("fcgiabuse", run) }

func run(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout io.Writer) error {
	fs := cli.NewFlagSet("fcgiabuse", summary, stdout)
	target := fs.String("target", "sudoku:9000", "worker FastCGI `address`: host:port (inside the compose network only) or unix:<socket path>")
	duration := fs.Duration("duration", 20*time.Second, "how long to attack")
	hold := fs.Int("hold", 300, "connections held open with unterminated params")
	flood := fs.Int("flood", 1000, "connections in the connection flood")
	if err := fs.Parse(args, lookupEnv); err != nil {
		return err
	}
	deadline := time.Now().Add(*duration)
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	a := &abuser{target: *target, deadline: deadline}
	a.network, a.addr = "tcp", *target
	if path, ok := strings.CutPrefix(*target, "unix:"); ok {
		a.network, a.addr = "unix", path
	}

	var wg sync.WaitGroup
	attack := func(f func(context.Context)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(ctx)
		}()
	}
	attack(func(ctx context.Context) { a.unterminatedParams(ctx, *hold) })
	for range 4 {
		attack(a.beginNoStdin)
	}
	attack(a.oversize)
	attack(func(ctx context.Context) { a.flood(ctx, *flood) })
	attack(a.garbage)
	go a.progress(ctx)
	wg.Wait()
	<-ctx.Done()
	held := a.closeHeld()
	return json.NewEncoder(stdout).Encode(map[string]int64{
		"conns": a.conns.Load(), "dial_errors": a.dialErrors.Load(), "bytes_sent": a.bytesSent.Load(),
		"begins": a.begins.Load(), "closed_by_worker": a.closedByWorker.Load(), "held": int64(held),
	})
}

// abuser holds the counts and the connections held open.
type abuser struct {
	target        string
	network, addr string // as net.Dial takes them
	deadline      time.Time

	conns, dialErrors, bytesSent, closedByWorker, begins atomic.Int64

	mu   sync.Mutex
	held []net.Conn
}

// dial opens a connection whose answers are read and dropped, so the
// worker never blocks on it; nil when dialling failed.
func (a *abuser) dial() net.Conn {
	conn, err := net.DialTimeout(a.network, a.addr, 2*time.Second)
	if err != nil {
		a.dialErrors.Add(1)
		return nil
	}
	a.conns.Add(1)
	conn.SetDeadline(a.deadline.Add(time.Second))
	go io.Copy(io.Discard, conn)
	return conn
}

// redial is dial retried until it succeeds or ctx ends (nil).
func (a *abuser) redial(ctx context.Context) net.Conn {
	for ctx.Err() == nil {
		if conn := a.dial(); conn != nil {
			return conn
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// write sends b and reports whether the worker still took it.
func (a *abuser) write(conn net.Conn, b []byte) bool {
	n, err := conn.Write(b)
	a.bytesSent.Add(int64(n))
	if err != nil {
		a.closedByWorker.Add(1)
		return false
	}
	return true
}

func (a *abuser) keep(conn net.Conn) {
	a.mu.Lock()
	a.held = append(a.held, conn)
	a.mu.Unlock()
}

func (a *abuser) heldCount() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.held)
}

func (a *abuser) closeHeld() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, conn := range a.held {
		conn.Close()
	}
	return len(a.held)
}

// unterminatedParams holds n connections, each with a BEGIN_REQUEST and a
// PARAMS record that claims more bytes than it sends.
func (a *abuser) unterminatedParams(ctx context.Context, n int) {
	for i := 0; i < n && ctx.Err() == nil; i++ {
		conn := a.dial()
		if conn == nil {
			continue
		}
		msg := append(fcgitest.BeginRequest(1, true), fcgitest.Header(fcgitest.TypeParams, 1, 60000, 0)...)
		msg = append(msg, fcgitest.Pair("REQUEST_METHOD", "GET")...)
		if a.write(conn, msg) {
			a.keep(conn)
		}
	}
}

// beginNoStdin sends BEGIN_REQUESTs with complete params and never any
// STDIN, over every request id, on one connection (a new one whenever the
// worker closes it).
func (a *abuser) beginNoStdin(ctx context.Context) {
	conn := a.dial()
	if conn == nil {
		return
	}
	params := append(fcgitest.Pair("REQUEST_METHOD", "GET"), fcgitest.Pair("SCRIPT_NAME", "/sudoku")...)
	params = append(params, fcgitest.Pair("QUERY_STRING", "puzzle=1")...)
	for id := 1; ctx.Err() == nil; id++ {
		rid := uint16(id%65535 + 1)
		msg := append(fcgitest.BeginRequest(rid, true), fcgitest.Record(fcgitest.TypeParams, rid, params)...)
		msg = append(msg, fcgitest.Record(fcgitest.TypeParams, rid, nil)...)
		if !a.write(conn, msg) {
			if conn = a.dial(); conn == nil {
				return
			}
		}
		a.begins.Add(1)
	}
}

// oversize sends a 2 GiB param length in a maximal padded record, then
// endless STDIN for another request.
func (a *abuser) oversize(ctx context.Context) {
	big := make([]byte, fcgitest.MaxContent)
	for i := range big {
		big[i] = 'A'
	}
	binary.BigEndian.PutUint32(big[0:], 0x7fffffff|1<<31)
	binary.BigEndian.PutUint32(big[4:], 0x7fffffff|1<<31)
	for {
		conn := a.redial(ctx)
		if conn == nil {
			return
		}
		msg := append(fcgitest.BeginRequest(7, true), fcgitest.Header(fcgitest.TypeParams, 7, len(big), 255)...)
		msg = append(msg, big...)
		msg = append(msg, make([]byte, 255)...)
		if a.write(conn, msg) {
			a.write(conn, append(fcgitest.BeginRequest(8, true), fcgitest.Record(fcgitest.TypeParams, 8, nil)...))
			for ctx.Err() == nil && a.write(conn, fcgitest.Record(fcgitest.TypeStdin, 8, big)) {
			}
		}
		conn.Close()
	}
}

// flood opens n idle connections and holds them.
func (a *abuser) flood(ctx context.Context, n int) {
	for i := 0; i < n && ctx.Err() == nil; i++ {
		if conn := a.dial(); conn != nil {
			a.keep(conn)
		}
	}
}

// garbage sends random bytes, bad versions, unknown types and aborts for
// unknown ids, one short-lived connection each.
func (a *abuser) garbage(ctx context.Context) {
	r := rand.New(rand.NewPCG(1, 2))
	for {
		conn := a.redial(ctx)
		if conn == nil {
			return
		}
		var msg []byte
		switch r.IntN(4) {
		case 0:
			msg = make([]byte, 1+r.IntN(4096))
			for i := range msg {
				msg[i] = byte(r.IntN(256))
			}
		case 1:
			msg = fcgitest.Record(fcgitest.TypeBeginRequest, 1, make([]byte, 8))
			msg[0] = 9 // bad version
		case 2:
			msg = fcgitest.Record(200, 1, []byte("unknown type"))
		default:
			msg = fcgitest.Record(fcgitest.TypeAbortRequest, uint16(r.IntN(65535)), nil)
		}
		a.write(conn, msg)
		time.Sleep(5 * time.Millisecond)
		conn.Close()
	}
}

// progress prints the counts to stderr once a second until ctx ends.
func (a *abuser) progress(ctx context.Context) {
	for ctx.Err() == nil {
		time.Sleep(time.Second)
		fmt.Fprintf(os.Stderr, "fcgiabuse %s: conns %d (held %d), dial errors %d, sent %d MiB, begins %d, closed by worker %d\n",
			a.target, a.conns.Load(), a.heldCount(), a.dialErrors.Load(), a.bytesSent.Load()>>20, a.begins.Load(), a.closedByWorker.Load())
	}
}
