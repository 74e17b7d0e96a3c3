package solver

import (
	"errors"
	"strings"
	"testing"
)

const (
	linePuzzle   = "000000010400000000020000000000050407008000300001090000300400200050100000000806000"
	lineSolution = "693784512487512936125963874932651487568247391741398625319475268856129743274836159"
)

func TestSplitLine(t *testing.T) {
	for _, tc := range []struct {
		line, id, rest string
		hasID          bool
	}{
		{linePuzzle, "", linePuzzle, false},
		{"a1:" + linePuzzle, "a1", linePuzzle, true},
		{":" + linePuzzle, "", linePuzzle, true},
		// An id may hold ':': the split is at the last one, since cells never do.
		{"2026-12-01T10:00:00:" + linePuzzle, "2026-12-01T10:00:00", linePuzzle, true},
		{"a:b:", "a:b", "", true},
		{"", "", "", false},
	} {
		id, rest, hasID := SplitLine(tc.line)
		if id != tc.id || rest != tc.rest || hasID != tc.hasID {
			t.Errorf("SplitLine(%q) = %q, %q, %v; want %q, %q, %v", tc.line, id, rest, hasID, tc.id, tc.rest, tc.hasID)
		}
		bid, brest, bhas := SplitLine([]byte(tc.line))
		if string(bid) != tc.id || string(brest) != tc.rest || bhas != tc.hasID {
			t.Errorf("SplitLine([]byte(%q)) = %q, %q, %v; want %q, %q, %v", tc.line, bid, brest, bhas, tc.id, tc.rest, tc.hasID)
		}
	}
}

func TestParseLine(t *testing.T) {
	id, hasID, g, err := ParseLine("x:y:" + linePuzzle)
	if err != nil || id != "x:y" || !hasID || g.String() != linePuzzle {
		t.Errorf("ParseLine(x:y:<puzzle>) = %q, %v, %v, %v; want x:y, true, the puzzle, nil", id, hasID, g, err)
	}
	// With a split at the first ':', "x" would be the id and "y:<cells>" a bad puzzle.
	if _, _, _, err := ParseLine("x:" + linePuzzle[:80]); !errors.Is(err, ErrInvalid) {
		t.Errorf("ParseLine(short) error = %v, want ErrInvalid", err)
	}
}

func TestAppendAnswers(t *testing.T) {
	sol, err := Parse(lineSolution)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		got  []byte
		want string
	}{
		{"no id", AppendSolution(AppendID(nil, []byte("a"), false), &sol, false, 1), lineSolution},
		{"empty id", AppendSolution(AppendID(nil, nil, true), &sol, false, 1), ":" + lineSolution},
		{"unique", AppendSolution(AppendID(nil, []byte("a:b"), true), &sol, true, 1), "a:b:" + lineSolution + " unique"},
		{"not unique", AppendSolution(nil, &sol, true, 2), lineSolution + " not-unique"},
		{"error", AppendError(AppendID(nil, []byte("7"), true), "cell 3: bad"), "7:error: cell 3: bad"},
	} {
		if string(tc.got) != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, tc.got, tc.want)
		}
	}
}

func TestParseAnswer(t *testing.T) {
	for _, tc := range []struct {
		line string
		want Answer
		ok   bool
	}{
		{lineSolution, Answer{Kind: AnswerSolved, Solution: lineSolution}, true},
		{"a:b:" + lineSolution + " unique", Answer{ID: "a:b", HasID: true, Kind: AnswerSolved, Solution: lineSolution, Word: wordUnique}, true},
		{"3:" + lineSolution + " not-unique", Answer{ID: "3", HasID: true, Kind: AnswerSolved, Solution: lineSolution, Word: WordNotUnique}, true},
		{"3:NoSolution", Answer{ID: "3", HasID: true, Kind: AnswerNone}, true},
		{"ServerTooBusy", Answer{Kind: AnswerBusy}, true},
		{"t:1:ServerTooBusy", Answer{ID: "t:1", HasID: true, Kind: AnswerBusy}, true},
		{"9:error: cell 3: bad", Answer{ID: "9", HasID: true, Kind: AnswerError, Message: "cell 3: bad"}, true},
		{"error: line longer than 4096 bytes", Answer{Kind: AnswerError, Message: "line longer than 4096 bytes"}, true},
		{"3:" + lineSolution + " multiple", Answer{}, false}, // the CLI's old word
		{"3:" + lineSolution[:80], Answer{}, false},
		{"", Answer{}, false},
	} {
		got, ok := ParseAnswer(tc.line)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseAnswer(%q) = %+v, %v; want %+v, %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
}

// An answer written by the Append functions reads back as what was written.
func TestAnswerRoundTrip(t *testing.T) {
	sol, _ := Parse(lineSolution)
	for _, id := range []string{"", "a", "a:b", "2026-12-01T10:00:00"} {
		for _, count := range []int{1, 2} {
			line := string(AppendSolution(AppendID(nil, []byte(id), id != ""), &sol, true, count))
			a, ok := ParseAnswer(line)
			if !ok || a.ID != id || a.Solution != lineSolution || (a.Word == wordUnique) != (count == 1) {
				t.Errorf("ParseAnswer(%q) = %+v, %v", line, a, ok)
			}
		}
	}
	if !strings.Contains(string(AppendError(nil, "x")), answerErrorPrefix) {
		t.Error("AppendError lost its prefix")
	}
}

func TestSplitLineAllocs(t *testing.T) {
	line := []byte("id:" + linePuzzle)
	if n := testing.AllocsPerRun(100, func() { SplitLine(line) }); n != 0 {
		t.Errorf("SplitLine allocates %v times, want 0", n)
	}
}
