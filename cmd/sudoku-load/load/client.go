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
)

// Client sends GET /sudoku requests and checks their answers. It is safe for
// concurrent use.
type Client struct {
	http *http.Client
	base string
	text bool
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
}

// NewClient returns a client that keeps up to cfg.Conns connections alive.
func NewClient(cfg ClientConfig) (*Client, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("load: bad URL %q: want http://host:port", cfg.URL)
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
		http: &http.Client{Transport: tr, Timeout: cfg.Timeout},
		base: strings.TrimRight(cfg.URL, "/") + "/sudoku",
		text: cfg.Text,
	}, nil
}

// Close closes idle connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }

// Outcome is the result of one request.
type Outcome struct {
	Kind Kind
	// Received is true when an HTTP answer (of any status) arrived.
	Received bool
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
	resp, err := c.http.Do(req)
	if err != nil {
		return Outcome{Kind: KindOfError(err), Err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return Outcome{Kind: KindOfError(err), Err: err}
	}
	if resp.StatusCode != http.StatusOK {
		return Outcome{Kind: KindOfStatus(resp.StatusCode), Received: true,
			Err: fmt.Errorf("status %d: %s", resp.StatusCode, bytes.TrimSpace(body))}
	}
	if err := c.check(p, body); err != nil {
		return Outcome{Kind: KindWrong, Received: true, Err: err}
	}
	return Outcome{Kind: KindOK, Received: true}
}

type answer struct {
	ID       string `json:"id"`
	Puzzle   string `json:"puzzle"`
	Solution string `json:"solution"`
}

func (c *Client) check(p Puzzle, body []byte) error {
	var a answer
	if c.text {
		line := strings.TrimSpace(string(body))
		if i := strings.IndexByte(line, ':'); i >= 0 {
			a.ID, a.Solution = line[:i], line[i+1:]
		} else {
			a.ID, a.Solution = p.ID, line
		}
	} else if err := json.Unmarshal(body, &a); err != nil {
		return fmt.Errorf("%w: decoding JSON answer: %v", ErrWrongAnswer, err)
	}
	if a.ID != p.ID {
		return fmt.Errorf("%w: answer for id %q, want %q", ErrWrongAnswer, a.ID, p.ID)
	}
	return Verify(p.Grid, a.Solution)
}
