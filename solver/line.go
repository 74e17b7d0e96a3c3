package solver

import "strings"

// The line format that the batch API, the sudoku CLI and the load tool share:
// a request line is "[id:]<81 cells>", its answer line "[id:]<answer>",
// where <answer> is one of
//
//	<81 digits>             the solution
//	<81 digits> unique      the solution, proven the only one (when asked)
//	<81 digits> not-unique  a solution of a puzzle with more than one (when asked)
//	NoSolution              the puzzle has none
//	ServerTooBusy           the line was not solved for lack of capacity or time; send it again
//	error: <message>        the line is malformed, or its solve failed
//
// A request line splits at its LAST ':'. Cells never contain ':', so an id
// may hold any bytes, ':' included ("2026-12-01T10:00:00:<cells>" has the
// id "2026-12-01T10:00:00"). A line with a ':' has an id, possibly empty;
// the answer repeats it as "id:" exactly as sent.
const (
	WordNotUnique    = "not-unique"
	AnswerNoSolution = "NoSolution"
	AnswerTooBusy    = "ServerTooBusy"
)

// The words that AppendSolution, AppendError and ParseAnswer keep to
// themselves.
const (
	wordUnique        = "unique"
	answerErrorPrefix = "error: "
)

// SplitLine splits a request line "[id:]<rest>" at its last ':'. hasID
// reports whether the line has a ':' (and so an id, possibly empty). It does
// not allocate: id and rest share line's memory.
func SplitLine[T ~string | ~[]byte](line T) (id, rest T, hasID bool) {
	for i := len(line) - 1; i >= 0; i-- {
		if line[i] == ':' {
			return line[:i], line[i+1:], true
		}
	}
	return line[:0], line, false
}

// ParseLine splits a request line and parses its cells (see Parse); the
// error wraps ErrInvalid.
func ParseLine(line string) (id string, hasID bool, g Grid, err error) {
	id, cells, hasID := SplitLine(line)
	g, err = Parse(cells)
	return id, hasID, g, err
}

// AppendID appends the answer line's "id:" prefix when the request line had
// an id.
func AppendID(dst []byte, id []byte, hasID bool) []byte {
	if !hasID {
		return dst
	}
	dst = append(dst, id...)
	return append(dst, ':')
}

// AppendSolution appends the solution's 81 digits and, when unique was asked
// (limit 2), " unique" for count 1 and " not-unique" for more.
func AppendSolution(dst []byte, g *Grid, unique bool, count int) []byte {
	for _, v := range g {
		dst = append(dst, '0'+v)
	}
	if !unique {
		return dst
	}
	if count == 1 {
		return append(append(dst, ' '), wordUnique...)
	}
	return append(append(dst, ' '), WordNotUnique...)
}

// AppendError appends the "error: <message>" answer.
func AppendError(dst []byte, msg string) []byte {
	return append(append(dst, answerErrorPrefix...), msg...)
}

// AnswerKind tells the answer words apart.
type AnswerKind int

// The kinds of answer line ParseAnswer reads.
const (
	AnswerSolved AnswerKind = iota
	AnswerNone              // NoSolution
	AnswerBusy              // ServerTooBusy
	AnswerError             // error: <message>
)

// Answer is an answer line read by ParseAnswer.
type Answer struct {
	ID    string
	HasID bool
	Kind  AnswerKind
	// Solution is the 81 characters after the id, unchecked (see Parse);
	// set for AnswerSolved only.
	Solution string
	// Word is "unique", "not-unique" or "" (not asked).
	Word string
	// Message is what follows "error: " for AnswerError.
	Message string
}

// ParseAnswer reads an answer line. An error message may hold ':', so an
// error answer splits at the first ":error: " (an id holding ":error: " is
// read wrongly there); every other answer splits at the last ':', as
// request lines do. ok is false for a line that is none of the answers.
func ParseAnswer(line string) (a Answer, ok bool) {
	if msg, found := strings.CutPrefix(line, answerErrorPrefix); found {
		return Answer{Kind: AnswerError, Message: msg}, true
	}
	if i := strings.Index(line, ":"+answerErrorPrefix); i >= 0 {
		return Answer{ID: line[:i], HasID: true, Kind: AnswerError, Message: line[i+1+len(answerErrorPrefix):]}, true
	}
	id, rest, hasID := SplitLine(line)
	a = Answer{ID: id, HasID: hasID}
	switch rest {
	case AnswerNoSolution:
		a.Kind = AnswerNone
		return a, true
	case AnswerTooBusy:
		a.Kind = AnswerBusy
		return a, true
	}
	sol, word, _ := strings.Cut(rest, " ")
	if len(sol) != 81 || (word != "" && word != wordUnique && word != WordNotUnique) {
		return Answer{}, false
	}
	a.Kind, a.Solution, a.Word = AnswerSolved, sol, word
	return a, true
}
