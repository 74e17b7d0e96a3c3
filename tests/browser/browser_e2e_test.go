//go:build e2e

// Package browser tests the web page at / in headless Chromium against the
// compose stack. Run it through tests/browser/run.sh (make test-browser),
// which starts the stack and passes its address in SUDOKU_E2E_HTTP.
package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"sudoku-fcgi/cmd/sudoku-load/load"
	"sudoku-fcgi/nginx/nginxtest"
	"sudoku-fcgi/solver"
)

// backgroundLoad sends puzzle at 40 requests/s over 2 connections, so that
// the live panel has something to draw, until the returned function stops
// it and tallies the answers.
func backgroundLoad(t *testing.T, origin, puzzle string) (stop func() load.WorkerTally) {
	t.Helper()
	cl, err := load.NewClient(load.ClientConfig{URL: origin, HTTPClient: &http.Client{Timeout: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	ps, err := load.ReadPuzzles(strings.NewReader(puzzle))
	if err != nil {
		t.Fatal(err)
	}
	ws := &load.Workers{}
	end := load.Background(context.Background(), load.LoadConfig{Client: cl, Puzzles: ps, Conns: 2, Rate: 40,
		Duration: time.Hour, OnSample: ws.Record})
	return func() load.WorkerTally {
		_, _ = end() // the tally holds every request's fate
		return ws.Tally()
	}
}

// screenshotPath is the README's picture of the page. The test rewrites it
// with -update (SUDOKU_BROWSER_UPDATE=1 tests/browser/run.sh), and otherwise
// saves its screenshot in the temporary directory, so a test run leaves the
// tree as it was.
const screenshotPath = "testdata/screenshot.png"

// needChromium returns Debian's chromium (or $SUDOKU_E2E_CHROMIUM). Without
// one the test is skipped, or fails under CI=true.
func needChromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SUDOKU_E2E_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium not found under CI (apt-get install chromium)")
	}
	t.Skip("chromium not installed (apt-get install chromium)")
	return ""
}

// readLines returns the lines of a file that are neither empty nor
// comments, trimmed.
func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s has no lines", path)
	}
	return out
}

// answerOf is what the service answers for one puzzle, by the solver:
// the solution, NoSolution or "error: <why>".
func answerOf(puzzle string) string {
	g, err := solver.Parse(puzzle)
	if err != nil {
		return "error: " + err.Error()
	}
	res := solver.Solve(g, 1)
	if res.Count == 0 {
		return "NoSolution"
	}
	return res.Solution.String()
}

// watch records what the page does that it must not: console errors,
// uncaught exceptions, requests to another origin, failed loads of its own
// files and server faults. The API's 4xx answers (and busy 503s) are part of
// the page's job: the browser logs each as a network error, which is
// allowed for /sudoku only.
type watch struct {
	origin string
	mu     sync.Mutex
	bad    []string
	reqs   int
}

func (w *watch) add(format string, args ...any) {
	w.mu.Lock()
	w.bad = append(w.bad, fmt.Sprintf(format, args...))
	w.mu.Unlock()
}

func (w *watch) api(u string) bool { return strings.HasPrefix(u, w.origin+"/sudoku") }

func (w *watch) start(ctx context.Context) {
	console := chromedp.Events(ctx, runtime.ConsoleAPICalled)
	exceptions := chromedp.Events(ctx, runtime.ExceptionThrown)
	logs := chromedp.Events(ctx, cdplog.EntryAdded)
	requests := chromedp.Events(ctx, network.RequestWillBeSent)
	responses := chromedp.Events(ctx, network.ResponseReceived)
	go func() {
		for ev, err := range console {
			if err != nil {
				return
			}
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				w.add("console.%s: %s", ev.Type, strings.Join(args, " "))
			}
		}
	}()
	go func() {
		for ev, err := range exceptions {
			if err != nil {
				return
			}
			d := ev.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			w.add("exception at %s:%d: %s", d.URL, d.LineNumber+1, msg)
		}
	}()
	go func() {
		for ev, err := range logs {
			if err != nil {
				return
			}
			e := ev.Entry
			if e.Level != cdplog.EntryLevelError {
				continue
			}
			if e.Source == cdplog.EntrySourceNetwork && w.api(e.URL) {
				continue
			}
			w.add("console %s error: %s (%s)", e.Source, e.Text, e.URL)
		}
	}()
	go func() {
		for ev, err := range requests {
			if err != nil {
				return
			}
			w.mu.Lock()
			w.reqs++
			w.mu.Unlock()
			u := ev.Request.URL
			if !strings.HasPrefix(u, w.origin+"/") && !strings.HasPrefix(u, "blob:"+w.origin+"/") {
				w.add("request leaves the origin: %s", u)
			}
		}
	}()
	go func() {
		for ev, err := range responses {
			if err != nil {
				return
			}
			r := ev.Response
			switch {
			case r.Status >= 500 && r.Status != http.StatusServiceUnavailable:
				w.add("server fault %d for %s", r.Status, r.URL)
			case r.Status >= 400 && !w.api(r.URL):
				w.add("status %d for the page's own %s", r.Status, r.URL)
			}
		}
	}()
}

func (w *watch) check(t *testing.T) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, b := range w.bad {
		t.Error(b)
	}
	t.Logf("%d requests from the page, all to %s", w.reqs, w.origin)
}

// page drives one browser tab.
type page struct {
	t   *testing.T
	ctx context.Context
	url string
}

func (p *page) do(actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	if err := chromedp.Do(p.ctx, actions...); err != nil {
		p.t.Fatal(err)
	}
}

func (p *page) eval(expr string) string {
	p.t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		p.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// waitFor waits until the JavaScript expression is truthy; on timeout it
// fails with what and the page's status lines.
func (p *page) waitFor(what, expr string, timeout time.Duration) {
	p.t.Helper()
	_, err := chromedp.Run(p.ctx, chromedp.Poll[chromedp.Void](expr,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(timeout)))
	if err != nil {
		p.t.Fatalf("waiting for %s: %v; solve status %q, batch status %q", what, err,
			p.text("status"), p.text("batch-status"))
	}
}

func (p *page) text(id string) string {
	v, _ := chromedp.Run(p.ctx, chromedp.Evaluate[string](`document.getElementById(`+jsString(id)+`).textContent`))
	return v
}

// grid is the grid as 81 characters, "." for an empty cell.
func (p *page) grid() string {
	p.t.Helper()
	return p.eval(`Array.from(document.querySelectorAll("#board .cell"), (e) => e.value || ".").join("")`)
}

func (p *page) waitGrid(want string) {
	p.t.Helper()
	p.waitFor("the grid to hold "+want,
		`Array.from(document.querySelectorAll("#board .cell"), (e) => e.value || ".").join("") === `+jsString(want), 20*time.Second)
}

func (p *page) waitStatus(id, substr string) {
	p.t.Helper()
	p.waitFor(fmt.Sprintf("#%s to say %q", id, substr),
		`document.getElementById(`+jsString(id)+`).textContent.includes(`+jsString(substr)+`)`, 20*time.Second)
}

// paste fires the paste event a user's Ctrl+V would, with text on the
// clipboard.
func (p *page) paste(text string) {
	p.t.Helper()
	p.eval(`(() => { const dt = new DataTransfer(); dt.setData("text/plain", ` + jsString(text) + `);
		document.body.dispatchEvent(new ClipboardEvent("paste", { clipboardData: dt, bubbles: true, cancelable: true })); return ""; })()`)
}

// firstPaint is the page's first contentful paint in ms since navigation
// (logged only: no timing assertions).
func (p *page) firstPaint() string {
	v, err := chromedp.Run(p.ctx, chromedp.Poll[float64](`(performance.getEntriesByName("first-contentful-paint")[0] || {}).startTime`,
		chromedp.WithPollingTimeout(5*time.Second)))
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	return fmt.Sprintf("%.0f", v)
}

func (p *page) navigate(path string) {
	p.t.Helper()
	p.do(chromedp.Navigate(p.url + path))
}

// press types keys as a real keyboard does: one keyDown that carries the
// character (its default action types it, so preventDefault stops it) and a
// keyUp. chromedp.KeyEvent sends the character in a separate "char" event
// that a keydown handler cannot cancel.
func press(keys string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		for _, r := range keys {
			var down *input.DispatchKeyEventParams
			for _, k := range kb.Encode(r) {
				switch k.Type {
				case kb.KeyDown:
					down = k
					continue
				case kb.KeyChar:
					down.Text, down.UnmodifiedText = k.Text, k.UnmodifiedText
					continue
				}
				if _, err := cdp.Call(ctx, t, input.DispatchKeyEvent, *down); err != nil {
					return err
				}
				if _, err := cdp.Call(ctx, t, input.DispatchKeyEvent, *k); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// pointsDrawn counts the points drawn in a chart: polyline vertices and
// single dots.
func (p *page) pointsDrawn(chart string) string {
	return `(() => { const svg = document.getElementById(` + jsString(chart) + `); let n = svg.querySelectorAll("circle").length;
		for (const l of svg.querySelectorAll("polyline")) n += l.getAttribute("points").trim().split(/\s+/).length; return n; })()`
}

func TestPage(t *testing.T) {
	addr := nginxtest.RequireEnv(t, "SUDOKU_E2E_HTTP", "tests/browser/run.sh", "test-browser")
	origin := "http://" + addr
	compose := nginxtest.RequireEnv(t, "SUDOKU_E2E_COMPOSE", "tests/browser/run.sh", "test-browser")
	chromium := needChromium(t)
	t.Run("headers", func(t *testing.T) { testHeaders(t, origin) })

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.WindowSize(1280, 1000),
		// Chromium refuses its sandbox as root (CI containers); the page
		// under test is our own.
		chromedp.NoSandbox,
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(allocCtx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 4*time.Minute)
	defer cancelTimeout()
	start := time.Now()
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", chromium, err)
	}
	t.Logf("chromium started in %v", time.Since(start).Round(time.Millisecond))
	w := &watch{origin: origin}
	w.start(ctx)
	p := &page{t: t, ctx: ctx, url: origin}

	held := readLines(t, "testdata/heldout.txt")[0]
	heldSolution := answerOf(held)

	t.Run("deep link solves on load", func(t *testing.T) {
		p.t = t
		p.navigate("/?puzzle=" + held)
		p.waitGrid(heldSolution)
		p.waitStatus("status", "Solved in")
		givens := p.eval(`String(document.querySelectorAll("#board .cell.given").length)`)
		if want := fmt.Sprint(81 - strings.Count(held, "0")); givens != want {
			t.Errorf("%s givens shown as givens, want %s", givens, want)
		}
		t.Logf("first contentful paint after %s ms (cold browser)", p.firstPaint())
	})

	t.Run("keyboard", func(t *testing.T) {
		p.t = t
		puzzle := strings.SplitN(readLines(t, "testdata/batch.txt")[1], ":", 2)[0]
		p.navigate("/")
		t.Logf("first contentful paint after %s ms; %s", p.firstPaint(), p.eval(`(() => { const n = performance.getEntriesByType("navigation")[0];
			return "response end " + Math.round(n.responseEnd) + " ms, DOM content loaded " + Math.round(n.domContentLoadedEventEnd) + " ms, load " + Math.round(n.loadEventEnd) + " ms"; })()`))
		p.do(chromedp.Click(chromedp.CSS("#board .cell")), press(puzzle))
		typed := strings.ReplaceAll(puzzle, "0", ".")
		if got := p.grid(); got != typed {
			t.Fatalf("after typing %s the grid holds %s", puzzle, got)
		}
		// Focus is on the last cell; up, left, then Backspace clears 70.
		p.do(press(kb.ArrowUp), press(kb.ArrowLeft))
		if got := p.eval(`document.activeElement.dataset.index`); got != "70" {
			t.Fatalf("after ArrowUp and ArrowLeft from cell 81 the focus is on index %s, want 70", got)
		}
		saved := p.eval(`document.activeElement.value`)
		p.do(press(kb.Backspace))
		if got := p.grid(); got[70] != '.' {
			t.Fatalf("Backspace left %q in cell 71", got[70])
		}
		if saved != "" {
			p.do(press(kb.ArrowRight), press(saved))
		}
		p.do(press(kb.Enter))
		p.waitGrid(answerOf(puzzle))
		if loc := p.eval(`location.search`); !strings.Contains(loc, "puzzle=") {
			t.Errorf("after the solve the URL is %q, want it to carry the puzzle", loc)
		}
	})

	t.Run("bad character at its cell", func(t *testing.T) {
		p.t = t
		bad := held[:40] + "x" + held[41:]
		p.paste(bad)
		p.do(chromedp.Click(chromedp.ID("solve-btn")))
		where := "cell 41 (row 5, column 5)"
		p.waitStatus("cell-msg", where)
		marked := p.eval(`Array.from(document.querySelectorAll("#board .cell.bad"), (e) => e.dataset.index).join(",")`)
		if marked != "40" {
			t.Errorf("cells marked %q, want 40 (%s)", marked, where)
		}
	})

	t.Run("conflicting givens", func(t *testing.T) {
		p.t = t
		// Two 9s in row 1: cells 1 and 9 (the held-out puzzle's row 1 is empty).
		conflict := "9" + held[1:8] + "9" + held[9:]
		p.paste(conflict)
		p.do(chromedp.Click(chromedp.ID("solve-btn")))
		p.waitStatus("status", "row 1 has two 9s")
		marked := p.eval(`Array.from(document.querySelectorAll("#board .cell.bad"), (e) => e.dataset.index).join(",")`)
		if marked != "0,8" {
			t.Errorf("cells marked %q, want 0,8", marked)
		}
	})

	t.Run("no solution", func(t *testing.T) {
		p.t = t
		p.paste(readLines(t, "../../solver/testdata/nosolution.txt")[0])
		p.do(chromedp.Click(chromedp.ID("solve-btn")))
		p.waitStatus("status", "puzzle has no solution")
	})

	t.Run("not unique", func(t *testing.T) {
		p.t = t
		p.paste(readLines(t, "../../solver/testdata/multiple.txt")[0])
		p.do(chromedp.Click(chromedp.ID("unique-btn")))
		p.waitStatus("status", "not unique")
		if loc := p.eval(`location.search`); !strings.HasSuffix(loc, "&unique=1") {
			t.Errorf("URL after a uniqueness check is %q, want &unique=1", loc)
		}
	})

	t.Run("stats panel draws", func(t *testing.T) {
		p.t = t
		p.waitFor("three points in the requests chart", p.pointsDrawn("chart-rps")+" >= 3", 30*time.Second)
		t.Logf("live panel: %s; workers: %s", p.text("live-status"), p.text("legend"))
	})

	t.Run("batch of 200", func(t *testing.T) { testBatch(t, p, 0) })
	t.Run("batch of 200, the answer stream broken after 10 lines", func(t *testing.T) { testBatch(t, p, 10) })

	t.Run("phone width", func(t *testing.T) {
		p.t = t
		p.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)))
		p.navigate("/?puzzle=" + held)
		p.waitGrid(heldSolution)
		if over := p.eval(`String(document.documentElement.scrollWidth - window.innerWidth)`); over != "0" {
			t.Errorf("on a 390 px wide screen the page is %s px wider than the screen", over)
		}
		// SUDOKU_E2E_PHONE_SHOT=<file.png> saves this view, to look at.
		if path := os.Getenv("SUDOKU_E2E_PHONE_SHOT"); path != "" {
			png, err := chromedp.Run(p.ctx, chromedp.FullScreenshot(100))
			if err == nil {
				err = os.WriteFile(path, png, 0o644)
			}
			if err != nil {
				t.Error(err)
			}
		}
		p.do(chromedp.EmulateViewport(1280, 1000))
	})

	// Some traffic from here on, so that the charts have something to show.
	bg := backgroundLoad(t, origin, held)
	p.navigate("/")
	t.Run("live panel across scaling and a restart", func(t *testing.T) { testScaling(t, p, compose) })

	t.Run("screenshot", func(t *testing.T) {
		p.t = t
		p.paste(held)
		p.do(chromedp.Click(chromedp.ID("solve-btn")))
		p.waitGrid(heldSolution)
		p.waitFor("twenty points in the requests chart", p.pointsDrawn("chart-rps")+" >= 20", 60*time.Second)
		t.Logf("background load: %v", bg())
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		path := screenshotPath
		if !*update {
			path = filepath.Join(os.TempDir(), "sudoku-browser-screenshot.png")
		}
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s (%d bytes)", path, len(png))
	})

	w.check(t)
}

// testHeaders checks the page's headers and that API clients see the API.
func testHeaders(t *testing.T, origin string) {
	get := func(path, accept string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, origin+path, nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	html := get("/", "text/html,application/xhtml+xml,*/*;q=0.8")
	for h, want := range map[string]string{
		"Content-Type":           "text/html; charset=utf-8",
		"X-Content-Type-Options": "nosniff",
		"Referrer-Policy":        "no-referrer",
		"Cache-Control":          "no-cache",
	} {
		if got := html.Header.Get(h); got != want {
			t.Errorf("GET / %s: %q, want %q", h, got, want)
		}
	}
	csp := html.Header.Get("Content-Security-Policy")
	for _, d := range []string{"default-src 'self'", "script-src 'self'", "style-src 'self'"} {
		if !strings.Contains(csp, d) {
			t.Errorf("GET / Content-Security-Policy %q lacks %q", csp, d)
		}
	}
	if strings.Contains(csp, "unsafe-inline") {
		t.Errorf("GET / Content-Security-Policy %q allows inline code", csp)
	}
	if html.Header.Get("X-Request-Id") == "" {
		t.Error("GET / has no X-Request-Id")
	}

	b, err := os.ReadFile(filepath.Join(wwwDir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range assetRef.FindAllSubmatch(b, -1) {
		path := "/assets/" + string(m[1]) + "?v=" + string(m[2])
		r := get(path, "")
		if r.StatusCode != http.StatusOK || !strings.Contains(r.Header.Get("Cache-Control"), "max-age=31536000") ||
			r.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: %d, Cache-Control %q, nosniff %q; want 200, a year, nosniff",
				path, r.StatusCode, r.Header.Get("Cache-Control"), r.Header.Get("X-Content-Type-Options"))
		}
	}

	// A client that does not ask for HTML (an API client, curl) gets the
	// JSON index of the API, which points to its description.
	for _, accept := range []string{"application/json", "*/*", ""} {
		req, _ := http.NewRequest(http.MethodGet, origin+"/", nil)
		req.Header.Set("Accept", accept)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Description string
			Routes      map[string]string
		}
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || body.Description != "/openapi.yaml" || len(body.Routes) == 0 {
			t.Errorf("GET / Accept %q: %d %+v (%v), want the JSON index pointing to /openapi.yaml", accept, resp.StatusCode, body, err)
		}
	}
	// The page adds nothing reachable: internal paths stay JSON 404s.
	for _, path := range []string{"/metrics", "/healthz", "/readyz", "/debug/pprof/", "/stub_status", "/index.html", "/assets/", "/www/index.html"} {
		if r := get(path, "text/html"); r.StatusCode != http.StatusNotFound || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			t.Errorf("GET %s: %d %s, want a JSON 404", path, r.StatusCode, r.Header.Get("Content-Type"))
		}
	}
}

// breakStream wraps the page's fetch: the first batch POST's answer ends
// cleanly after keep lines, as nginx 1.22 ends the answer of a worker that
// dies mid-batch (tests/integration, "dies mid-stream"). It counts the lines
// of every batch POST in window.batchPosts.
const breakStream = `((keep) => {
	const real = window.fetch;
	window.batchPosts = [];
	window.fetch = async (url, init) => {
		const resp = await real(url, init);
		if (!init || init.method !== "POST") return resp;
		window.batchPosts.push(init.body.split("\n").filter((l) => l !== "").length);
		if (window.batchPosts.length > 1) return resp;
		const reader = resp.body.getReader(), dec = new TextDecoder(), enc = new TextEncoder();
		let buf = "", sent = 0;
		return new Response(new ReadableStream({ async pull(c) {
			for (;;) {
				const nl = buf.indexOf("\n");
				if (nl >= 0 && sent === keep) { reader.cancel(); c.close(); return; }
				if (nl >= 0) { c.enqueue(enc.encode(buf.slice(0, nl + 1))); buf = buf.slice(nl + 1); sent++; return; }
				const { value, done } = await reader.read();
				if (done) { c.close(); return; }
				buf += dec.decode(value, { stream: true });
			}
		} }), { status: resp.status, statusText: resp.statusText, headers: resp.headers });
	};
	return "wrapped";
})`

// testBatch drops the 200-line file on the page, waits for the 200 answers
// and checks the downloaded result line by line against the solver. With
// breakAfter > 0 the first answer stream ends after breakAfter lines: the
// page sends the other lines again, and only those.
func testBatch(t *testing.T, p *page, breakAfter int) {
	p.t = t
	dir := t.TempDir()
	file, err := filepath.Abs("testdata/batch.txt")
	if err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, "testdata/batch.txt")
	if len(lines) != 200 {
		t.Fatalf("testdata/batch.txt has %d puzzle lines, want 200", len(lines))
	}
	if _, err := chromedp.CallBrowser(p.ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dir, EventsEnabled: new(true),
	}); err != nil {
		t.Fatal(err)
	}
	p.navigate("/")
	if breakAfter > 0 {
		p.eval(breakStream + "(" + fmt.Sprint(breakAfter) + ")")
	}
	start := time.Now()
	p.do(chromedp.SetUploadFiles(chromedp.ID("batch-file"), []string{file}))
	p.waitStatus("batch-status", "Done: 200 of 200 answered")
	t.Logf("200 answers in %v: %s", time.Since(start).Round(time.Millisecond), p.text("batch-status"))
	if got := p.text("batch-status"); !strings.Contains(got, "196 solved, 2 no solution, 2 errors") {
		t.Errorf("batch status %q, want 196 solved, 2 no solution, 2 errors", got)
	}
	if breakAfter > 0 {
		want := fmt.Sprintf("[%d,%d]", len(lines), len(lines)-breakAfter)
		if got := p.eval(`JSON.stringify(window.batchPosts)`); got != want {
			t.Errorf("lines per batch POST %s, want %s (all, then the unanswered ones again)", got, want)
		}
	}

	downloads := chromedp.BrowserEvents(p.ctx, browser.DownloadProgress)
	p.do(chromedp.Click(chromedp.ID("batch-download")))
	for ev, err := range downloads {
		if err != nil {
			t.Fatalf("waiting for the download: %v", err)
		}
		if ev.State == browser.DownloadProgressStateCompleted {
			break
		}
		if ev.State == browser.DownloadProgressStateCanceled {
			t.Fatal("the download was canceled")
		}
	}
	got := readLines(t, filepath.Join(dir, "batch.answers.txt"))
	if len(got) != len(lines) {
		t.Fatalf("downloaded %d answer lines, want %d", len(got), len(lines))
	}
	for i, in := range lines {
		id, puzzle, hasID := strings.Cut(in, ":")
		if !hasID {
			id, puzzle = "", in
		}
		want := answerOf(puzzle)
		if hasID {
			want = id + ":" + want
		}
		if got[i] != want {
			t.Errorf("answer line %d = %q, want %q", i+1, got[i], want)
		}
	}
}

// testScaling scales the workers 2 -> 3, restarts one and scales back to 2
// while the page polls: the panel must show the third worker, mark the
// restart, drop the worker that is gone and go on drawing throughout.
func testScaling(t *testing.T, p *page, compose string) {
	p.t = t
	workers := `document.querySelectorAll("#legend span").length`
	sh := func(args ...string) {
		t.Helper()
		cmd := exec.Command(args[0], args[1:]...)
		out, err := cmd.CombinedOutput()
		t.Logf("%s (%v)", strings.Join(args, " "), err)
		if err != nil {
			t.Fatalf("%s", out)
		}
	}
	up := func(n int) []string {
		return append(strings.Fields(compose), "up", "-d", "--no-deps", "--no-recreate", "--no-build", "--scale", fmt.Sprintf("sudoku=%d", n), "sudoku")
	}
	p.waitFor("two workers in the legend", workers+" === 2", 30*time.Second)
	sh(up(3)...)
	p.waitFor("three workers in the legend", workers+" === 3", 60*time.Second)
	first := strings.Fields(p.eval(`document.querySelector("#legend span").textContent`))[0]
	first = strings.TrimSuffix(first, ",")
	sh("docker", "restart", "-t", "5", first)
	p.waitStatus("legend", first+" (restarted)")
	polls := `parseInt(document.getElementById("live-status").textContent, 10)`
	p.waitFor("a successful poll", polls+" > 0", 30*time.Second)
	before := p.eval(`String(` + polls + `)`)
	sh(up(2)...)
	p.waitFor("the removed worker to leave the legend", workers+" === 2", 90*time.Second)
	p.waitFor("answers to the polls after the scale down", polls+" > "+before+" + 5", 30*time.Second)
	t.Logf("live panel: %s; legend: %s", p.text("live-status"), p.text("legend"))
}
