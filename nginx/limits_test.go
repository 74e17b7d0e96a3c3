package nginx

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"sudoku-fcgi/cmd/contract"
	"sudoku-fcgi/fcgi/fcgiserver"
	"sudoku-fcgi/nginx/conf"
)

// TestSharedLimits checks the limits that nginx and the worker share on the
// configuration sudoku-edge renders by default, against the worker's own
// defaults (the contract's, and the FastCGI server's params limit), so that
// a rendered value that strays from them fails here:
//   - a GET's fastcgi_read_timeout exceeds the worker's queue timeout plus
//     its solve budget (past them the worker answers 503 itself), or nginx
//     would give up on a live worker and retry a slow but healthy GET;
//   - the batch POST's exceeds the worker's batch deadline;
//   - the largest request nginx.conf's header buffers admit fits, as
//     FastCGI params, in the worker's params limit, or the worker would
//     close the connection on it;
//   - the largest body nginx takes is no larger than the worker's.
func TestSharedLimits(t *testing.T) {
	dir := t.TempDir()
	if err := RenderSite(dir, hostSite(dir)); err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	serve := fcgiserver.DefaultOptions()

	timeouts := locationTimeouts(t, read("sudoku-locations.conf"))
	for loc, floor := range map[string]time.Duration{
		"/sudoku":        contract.QueueTimeout + contract.SolveTimeout,
		"/sudoku/stats":  contract.QueueTimeout + contract.SolveTimeout,
		"/_sudoku_batch": contract.BatchTimeout,
	} {
		got, ok := timeouts[loc]
		if !ok {
			t.Errorf("location = %s has no fastcgi_read_timeout", loc)
		} else if got <= floor {
			t.Errorf("location = %s: fastcgi_read_timeout %v, want above the worker's %v", loc, got, floor)
		}
	}

	m := regexp.MustCompile(`(?m)^\s*large_client_header_buffers (\d+) (\d+)k;`).FindStringSubmatch(read("nginx.conf"))
	if m == nil {
		t.Fatal("nginx.conf has no large_client_header_buffers <n> <size>k")
	}
	n, _ := strconv.Atoi(m[1])
	size, _ := strconv.Atoi(m[2])
	size <<= 10
	// The request line takes one buffer, so its URI (at most size) is in
	// the params once with sudoku-fastcgi.conf (REQUEST_URI) and up to
	// three times with Debian's fastcgi_params (then SCRIPT_NAME and
	// DOCUMENT_URI, or QUERY_STRING), the bound the worker keeps room
	// for. The header lines (at most n buffers) grow as params: the 3-byte
	// line "a:\n" is the 8-byte pair HTTP_A="". fixedParams bounds the rest
	// of the params.
	const fixedParams = 4 << 10
	if worst := 3*size + n*size*8/3 + fixedParams; worst > serve.MaxParamsBytes {
		t.Errorf("large_client_header_buffers %d %dk admit requests of up to %d bytes of params, over the worker's limit of %d", n, size>>10, worst, serve.MaxParamsBytes)
	}

	// nginx holds a batch body in memory until the worker has it: it takes
	// none larger than the worker does, or it would hold bodies that the
	// worker then refuses.
	files, err := clientLimitFiles(conf.DefaultClientLimits)
	if err != nil {
		t.Fatal(err)
	}
	m = regexp.MustCompile(`(?m)^client_max_body_size (\d+);`).FindStringSubmatch(string(files[0]))
	if m == nil {
		t.Fatal("client-limits.conf has no client_max_body_size <bytes>")
	}
	if body, _ := strconv.ParseInt(m[1], 10, 64); body > contract.MaxBodyBytes {
		t.Errorf("client_max_body_size %d, over the worker's -max-body %d", body, contract.MaxBodyBytes)
	}
}

// locationTimeouts maps each exact location of conf to its
// fastcgi_read_timeout.
func locationTimeouts(t *testing.T, conf string) map[string]time.Duration {
	t.Helper()
	out := map[string]time.Duration{}
	loc := ""
	for _, line := range strings.Split(conf, "\n") {
		f := strings.Fields(strings.TrimSuffix(strings.TrimSpace(line), ";"))
		switch {
		case len(f) == 4 && f[0] == "location" && f[1] == "=":
			loc = f[2]
		case len(f) == 2 && f[0] == "fastcgi_read_timeout" && loc != "":
			d, err := time.ParseDuration(f[1])
			if err != nil {
				t.Fatalf("location = %s: fastcgi_read_timeout %q: %v", loc, f[1], err)
			}
			out[loc] = d
		}
	}
	return out
}

// The batch POST's 413 names the limit that client_max_body_size enforces
// (-max-body), not a figure written beside it.
func TestBodyLimitMessage(t *testing.T) {
	for _, tt := range []struct {
		max  int64
		want string
	}{
		{1 << 20, "limit 1 MiB"},
		{3 << 20, "limit 3 MiB"},
		{64 << 10, "limit 64 KiB"},
		{1500, "limit 1500 bytes"},
	} {
		l := conf.DefaultClientLimits
		l.MaxBody = tt.max
		files, err := clientLimitFiles(l)
		if err != nil {
			t.Fatal(err)
		}
		if want := `default "request body too large (` + tt.want + `)";`; !strings.Contains(string(files[0]), want) {
			t.Errorf("clientLimitFiles(MaxBody %d): client-limits.conf lacks %s:\n%s", tt.max, want, files[0])
		}
	}
}

// clientLimitFiles renders the start files for l, the default limits
// otherwise, and returns client-limits.conf, route-limits.conf and
// batch-limits.conf.
func clientLimitFiles(l conf.ClientLimits) ([3][]byte, error) {
	files, err := conf.RenderStart(conf.Start{Limits: conf.DefaultProcessLimits, Clients: l})
	return [3][]byte{files["client-limits.conf"], files["route-limits.conf"], files["batch-limits.conf"]}, err
}
