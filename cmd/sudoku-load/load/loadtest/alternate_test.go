package loadtest

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

type countingRT struct{ n atomic.Int64 }

func (c *countingRT) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

func TestAlternate(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	var a, b countingRT
	c := &http.Client{Transport: Alternate(&a, &b)}
	for range 10 {
		resp, err := c.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if a.n.Load() != 5 || b.n.Load() != 5 {
		t.Errorf("Alternate sent %d and %d of 10 requests, want 5 and 5", a.n.Load(), b.n.Load())
	}
}
