package fcgi

import (
	"unicode/utf8"

	"sudoku-fcgi/solver"
)

// The JSON answers are written by hand, cheaper than through encoding/json
// (tests/bench/HISTORY.md, "the JSON encoder stays hand-made");
// FuzzAppendJSONString checks that encoding/json reads them back.

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string, escaping what JSON requires
// and replacing invalid UTF-8 with U+FFFD. Unlike encoding/json's default
// it leaves '<', '>' and '&' as they are: the answers are never embedded
// in HTML, and a message such as "[id:]<81 cells>" reaches a client as
// written, not as "\u003c81 cells\u003e".
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendError appends {"error":msg[,"id":id]}.
func appendError(b []byte, msg, id string) []byte {
	b = append(b, `{"error":`...)
	b = appendJSONString(b, msg)
	if id != "" {
		b = append(b, `,"id":`...)
		b = appendJSONString(b, id)
	}
	return append(b, "}\n"...)
}

// appendSolution appends the JSON answer to a GET.
func appendSolution(b []byte, id string, puzzle, sol *solver.Grid, unique, withUnique bool) []byte {
	b = append(b, '{')
	if id != "" {
		b = append(b, `"id":`...)
		b = appendJSONString(b, id)
		b = append(b, ',')
	}
	b = append(b, `"puzzle":"`...)
	b = solver.AppendSolution(b, puzzle, false, 0) // the 81 cells, 0 for a blank
	b = append(b, `","solution":"`...)
	b = solver.AppendSolution(b, sol, false, 0)
	b = append(b, '"')
	if withUnique {
		if unique {
			b = append(b, `,"unique":true`...)
		} else {
			b = append(b, `,"unique":false`...)
		}
	}
	return append(b, "}\n"...)
}
