package fcgi

import (
	"encoding/json"

	"sudoku-fcgi/solver"
)

// errorJSON is the body of every error answer.
type errorJSON struct {
	Error string `json:"error"`
	ID    string `json:"id,omitempty"`
}

// solutionJSON is the JSON answer to a GET; Unique is there when the
// client asked (unique=1).
type solutionJSON struct {
	ID       string `json:"id,omitempty"`
	Puzzle   string `json:"puzzle"`
	Solution string `json:"solution"`
	Unique   *bool  `json:"unique,omitempty"`
}

// encode returns v as a JSON line. The types above always encode.
func encode(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // unreachable: strings and bools only
	}
	return append(b, '\n')
}

// encodeError returns {"error":msg[,"id":id]}.
func encodeError(msg, id string) []byte { return encode(errorJSON{Error: msg, ID: id}) }

// encodeSolution returns the JSON answer to a GET.
func encodeSolution(id string, puzzle, sol *solver.Grid, unique, withUnique bool) []byte {
	v := solutionJSON{ID: id, Puzzle: puzzle.String(), Solution: sol.String()}
	if withUnique {
		v.Unique = &unique
	}
	return encode(v)
}
