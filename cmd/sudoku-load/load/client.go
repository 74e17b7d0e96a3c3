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
	"time"

	"sudoku-fcgi/solver"
)

// Client sends GET /sudoku requests and checks their answers. It is safe for
// concurrent use.
type Client struct {
	http  *http.Client
	base  string
	text  bool
	agent string
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
	// URL + "/sudoku".
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
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("load: bad URL %q: want http://host:port", cfg.URL)
	}
	if cfg.HTTPClient != nil {
		return &Client{http: cfg.HTTPClient, base: strings.TrimRight(cfg.URL, "/") + "/sudoku", text: cfg.Text, agent: cfg.UserAgent}, nil
	}
	if cfg.Conns < 1 {
		cfg.Conns = 1
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: cfg.Timeout, KeepAlive: 30 * time.Second}).DialContext,
		MaxConnsPerHost:     cfg.Conns,
		MaxIdleConns:        cfg.Conns,
		MaxIdleConnsPerHost: cfg.Conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}
	return &Client{
		http:  &http.Client{Transport: tr, Timeout: cfg.Timeout},
		base:  strings.TrimRight(cfg.URL, "/") + "/sudoku",
		text:  cfg.Text,
		agent: cfg.UserAgent,
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

// Solve asks the server to solve p and checks the answer.
func (c *Client) Solve(ctx context.Context, p Puzzle) Outcome {
	u := c.base + "?puzzle=" + p.Text + "&id=" + url.QueryEscape(p.ID)
	if c.text {
		u += "&format=text"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return Outcome{Kind: KindOther, Err: err}
	}
	if c.agent != "" {
		req.Header.Set("User-Agent", c.agent)
	}
	resp, err := c.http.Do(req)
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
