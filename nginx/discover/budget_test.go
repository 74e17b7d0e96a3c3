package discover

import (
	"testing"
	"time"
)

func TestBudget(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	b := Budget{Hold: time.Minute}
	steps := []struct {
		sec, workers, want int
		expired            bool // Expired(workers, at(sec)) before the Update
	}{
		{0, 2, 2, false},
		{10, 1, 2, false},  // a restart: the other takes the missing share
		{25, 2, 2, false},  // back within Hold
		{30, 4, 4, false},  // a scale-up counts at once
		{40, 3, 4, false},  // one missing ...
		{90, 2, 4, false},  // ... then two, still within Hold of the first miss
		{100, 2, 2, true},  // Hold since the first miss: a scale-down to 2
		{110, 0, 2, false}, // all down
		{170, 0, 0, true},  // gone for Hold: no budget
		{180, 2, 2, false},
	}
	for _, s := range steps {
		if got := b.Expired(s.workers, at(s.sec)); got != s.expired {
			t.Errorf("at %ds with %d workers: Expired = %v, want %v", s.sec, s.workers, got, s.expired)
		}
		if got := b.Update(s.workers, at(s.sec)); got != s.want {
			t.Errorf("at %ds with %d workers: budget %d, want %d", s.sec, s.workers, got, s.want)
		}
	}

	never := Budget{}
	never.Update(3, at(0))
	if got := never.Update(1, at(0)); got != 3 {
		t.Errorf("zero Hold: budget %d after a miss, want 3", got)
	}
	if never.Expired(1, at(1e6)) || never.Update(1, at(1e6)) != 3 {
		t.Error("zero Hold: the budget fell, want it kept")
	}
}
