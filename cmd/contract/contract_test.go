package contract

import (
	"testing"
	"time"
)

// TestAgreements checks the inequalities between the two binaries'
// defaults, so that changing one side alone fails here.
func TestAgreements(t *testing.T) {
	// Past the worker's queue wait and solve budget it answers 503 itself:
	// nginx must not give up on it first.
	if ReadTimeout <= QueueTimeout+SolveTimeout {
		t.Errorf("ReadTimeout %v, want above QueueTimeout + SolveTimeout = %v", ReadTimeout, QueueTimeout+SolveTimeout)
	}
	if BatchReadTimeout <= BatchTimeout {
		t.Errorf("BatchReadTimeout %v, want above BatchTimeout %v", BatchReadTimeout, BatchTimeout)
	}
	// A round's probe may take up to ResolveInterval, and a drain that
	// starts just after a probe is seen only by the next round.
	if DrainLinger < 2*ResolveInterval {
		t.Errorf("DrainLinger %v, want at least two ResolveIntervals (%v)", DrainLinger, 2*ResolveInterval)
	}
	for name, d := range map[string]time.Duration{"QueueTimeout": QueueTimeout, "SolveTimeout": SolveTimeout, "BatchTimeout": BatchTimeout, "ResolveInterval": ResolveInterval} {
		if d <= 0 {
			t.Errorf("%s = %v, want above 0", name, d)
		}
	}
	// nginx renders its timeouts in whole milliseconds.
	for name, d := range map[string]time.Duration{"ReadTimeout": ReadTimeout, "BatchReadTimeout": BatchReadTimeout} {
		if d%time.Millisecond != 0 {
			t.Errorf("%s = %v, want whole milliseconds", name, d)
		}
	}
	if MaxBodyBytes < 1 {
		t.Errorf("MaxBodyBytes = %d, want at least 1", MaxBodyBytes)
	}
}

// TestSocketName covers the names the worker's check (socketName in
// cmd/sudoku-fcgi) and the edge's (discover.SafeSocketPath) took before
// they became this one rule.
func TestSocketName(t *testing.T) {
	for _, tt := range []struct {
		name string
		want bool
	}{
		// Both took these.
		{"3f2a9c1b.sock", true},
		{"w-1.a_b.sock", true},
		{"a.sock", true},
		{"W7.sock", true},
		// Both refused these: nginx would misread them.
		{"", false},
		{"a;b.sock", false},
		{"a b.sock", false},
		{"{.sock", false},
		{"$x.sock", false},
		{"a#b.sock", false},
		{`a"b.sock`, false},
		{"a'b.sock", false},
		{`a\b.sock`, false},
		{"a\tb.sock", false},
		{"a\nb.sock", false},
		{"a/b.sock", false},
		// The worker refused these, the edge listed them: the stricter rule wins.
		{".x.sock", false},
		{"a+b.sock", false},
		{"a@b.sock", false},
		{"a:b.sock", false},
		{"a*b.sock", false},
		{"é.sock", false},
	} {
		if got := SocketName(tt.name); got != tt.want {
			t.Errorf("SocketName(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}
