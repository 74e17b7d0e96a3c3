package load

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"sudoku-fcgi/solver"
)

// Client sends GET /sudoku requests and checks their answers. It is safe for
// concurrent use.
type Client struct {
	http *http.Client
	// bases are the URLs + "/sudoku" of the service's addresses; cur
	// indexes the one requests go to until it fails (failover).
	bases   []string
	cur     atomic.Int32
	attempt time.Duration // bound of one attempt when there are several bases
	text    bool
	agent   string
	// sleep waits d or until ctx ends; nil is the real wait (tests record).
	sleep func(ctx context.Context, d time.Duration)
}

// wait waits d, or until ctx ends.
func (c *Client) wait(ctx context.Context, d time.Duration) {
	if c.sleep != nil {
		c.sleep(ctx, d)
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// ClientConfig configures NewClient.
type ClientConfig struct {
	// URL is the base URL, e.g. http://127.0.0.1:8080; requests go to
	// URL + "/sudoku". Several, separated by commas, are addresses of one
	// service (edges on several nodes): requests go to the first until an
	// attempt gets no answer, and then, that request too, to the next.
	URL string
	// Conns bounds the connections to the server (and so the requests in
	// flight).
	Conns int
	// Timeout bounds each request, connecting included.
	Timeout time.Duration
	// Text asks for format=text answers instead of JSON.
	Text bool
	// UserAgent, if set, is every request's User-Agent header (the tests
	// name their load phases with it in nginx's access log).
	UserAgent string
	// HTTPClient, if set, sends the requests instead of a client built
	// from Conns and Timeout (e.g. one with its own TLS configuration).
	HTTPClient *http.Client
}

// NewClient returns a client that keeps up to cfg.Conns connections alive.
func NewClient(cfg ClientConfig) (*Client, error) {
	var bases []string
	for _, raw := range strings.Split(cfg.URL, ",") {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("load: bad URL %q: want http://host:port", raw)
		}
		bases = append(bases, strings.TrimRight(raw, "/")+"/sudoku")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	// With several addresses, one attempt has its share of the timeout, so
	// that a request to an address that went silent still has time for
	// the others; connecting has at most a second of it.
	attempt := cfg.Timeout / time.Duration(len(bases))
	dial := cfg.Timeout
	if len(bases) > 1 {
		dial = min(attempt, time.Second)
	}
	if cfg.HTTPClient != nil {
		return &Client{http: cfg.HTTPClient, bases: bases, attempt: attempt, text: cfg.Text, agent: cfg.UserAgent}, nil
	}
	if cfg.Conns < 1 {
		cfg.Conns = 1
	}
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: dial, KeepAlive: 30 * time.Second}).DialContext,
		MaxConnsPerHost:     cfg.Conns,
		MaxIdleConns:        cfg.Conns,
		MaxIdleConnsPerHost: cfg.Conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}
	return &Client{
		http:    &http.Client{Transport: tr, Timeout: cfg.Timeout},
		bases:   bases,
		attempt: attempt,
		text:    cfg.Text,
		agent:   cfg.UserAgent,
	}, nil
}

// Close closes idle connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }

// Outcome is the result of one request.
type Outcome struct {
	Kind Kind
	// Received is true when an HTTP answer (of any status) arrived.
	Received bool
	// Status is the answer's HTTP status (0 when none arrived).
	Status int
	// Worker is the answer's X-Sudoku-Worker header: the worker that
	// solved it.
	Worker string
	// RetryAfter is the answer's Retry-After header, which every busy
	// answer of the service carries.
	RetryAfter string
	// Err describes a non-OK outcome.
	Err error
}

// Solve asks the server to solve p and checks the answer. With several
// addresses, a request that gets no answer from one (a refused or silent
// connection) goes to the next, each at most once; a GET may be resent.
func (c *Client) Solve(ctx context.Context, p Puzzle) Outcome {
	var resp *http.Response
	var err error
	for range c.bases {
		at := c.cur.Load()
		resp, err = c.get(ctx, c.bases[at], p)
		if err == nil || len(c.bases) == 1 || ctx.Err() != nil {
			break
		}
		// The first request to find this address dead moves everyone on.
		c.cur.CompareAndSwap(at, (at+1)%int32(len(c.bases)))
	}
	if err != nil {
		return Outcome{Kind: kindOfError(err), Err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	out := Outcome{Received: true, Status: resp.StatusCode, Worker: resp.Header.Get("X-Sudoku-Worker")}
	switch {
	case err != nil:
		return Outcome{Kind: kindOfError(err), Status: out.Status, Worker: out.Worker, Err: err}
	case resp.StatusCode != http.StatusOK:
		out.Kind = kindOfStatus(resp.StatusCode)
		out.RetryAfter = resp.Header.Get("Retry-After")
		out.Err = fmt.Errorf("status %d: %s", resp.StatusCode, bytes.TrimSpace(body))
	default:
		if out.Err = c.check(p, body); out.Err != nil {
			out.Kind = KindWrong
		}
	}
	return out
}

// get sends GET base?puzzle=... for p, bounded by the attempt's share of
// the timeout when there are several addresses.
func (c *Client) get(ctx context.Context, base string, p Puzzle) (*http.Response, error) {
	u := base + "?puzzle=" + p.Text + "&id=" + url.QueryEscape(p.ID)
	if c.text {
		u += "&format=text"
	}
	if len(c.bases) > 1 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.attempt)
		// The body is read after get returns: cancel when it is closed.
		resp, err := c.send(ctx, u)
		if err != nil {
			cancel()
			return nil, err
		}
		resp.Body = cancelOnClose{resp.Body, cancel}
		return resp, nil
	}
	return c.send(ctx, u)
}

func (c *Client) send(ctx context.Context, u string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	if c.agent != "" {
		req.Header.Set("User-Agent", c.agent)
	}
	return c.http.Do(req)
}

// cancelOnClose ends an attempt's context when its answer's body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

type answer struct {
	ID       string `json:"id"`
	Puzzle   string `json:"puzzle"`
	Solution string `json:"solution"`
}

func (c *Client) check(p Puzzle, body []byte) error {
	var a answer
	if c.text {
		ta, ok := solver.ParseAnswer(strings.TrimSpace(string(body)))
		if !ok || ta.Kind != solver.AnswerSolved {
			return fmt.Errorf("%w: text answer %.100q is not a solution line", errWrongAnswer, body)
		}
		a.ID, a.Solution = ta.ID, ta.Solution
		if !ta.HasID {
			a.ID = p.ID
		}
	} else if err := json.Unmarshal(body, &a); err != nil {
		return fmt.Errorf("%w: decoding JSON answer: %v", errWrongAnswer, err)
	}
	if a.ID != p.ID {
		return fmt.Errorf("%w: answer for id %q, want %q", errWrongAnswer, a.ID, p.ID)
	}
	return verify(p.Grid, a.Solution)
}
