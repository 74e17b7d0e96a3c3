package fcgi

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"sudoku-fcgi/solver"
)

// query holds the GET parameters the handler knows; unknown ones are ignored.
type query struct {
	puzzle, id, unique, format string
	hasPuzzle                  bool
}

var errEscape = badRequest("query string has an invalid %-escape")

// parseQuery reads a raw query string without building a url.Values map:
// values that need no unescaping are substrings of raw, so the common case
// allocates nothing. The first occurrence of a key wins.
func parseQuery(raw string) (query, error) {
	var q query
	var seen uint8
	for raw != "" {
		var kv string
		kv, raw, _ = strings.Cut(raw, "&")
		if kv == "" {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		if strings.ContainsAny(k, "%+") {
			var err error
			if k, err = url.QueryUnescape(k); err != nil {
				return q, errEscape
			}
		}
		var dst *string
		var bit uint8
		switch k {
		case "puzzle":
			dst, bit = &q.puzzle, 1
		case "id":
			dst, bit = &q.id, 2
		case "unique":
			dst, bit = &q.unique, 4
		case "format":
			dst, bit = &q.format, 8
		default:
			continue
		}
		if seen&bit != 0 {
			continue
		}
		seen |= bit
		if strings.ContainsAny(v, "%+") {
			var err error
			if v, err = url.QueryUnescape(v); err != nil {
				return q, errEscape
			}
		}
		*dst = v
	}
	q.hasPuzzle = seen&1 != 0
	return q, nil
}

const maxIDLen = 64

var (
	errLongID = badRequest("id is longer than 64 bytes")
	errBadID  = badRequest("id may not contain control characters or ':'")
)

// checkID rejects ids that would break the JSON or line protocol or are
// unreasonably long.
func checkID(id string) error {
	if len(id) > maxIDLen {
		return errLongID
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c < 0x20 || c == 0x7f || c == ':' {
			return errBadID
		}
	}
	return nil
}

// getRequest is a checked GET /sudoku.
type getRequest struct {
	id     string // echoed in every answer once it is known to be valid
	grid   solver.Grid
	unique bool
	text   bool // format=text; false for json or no format
	format bool // a format was given
}

var (
	errUnique = badRequest("unique must be 0 or 1")
	errFormat = badRequest("format must be json or text")
)

// parseGet checks the query of a GET /sudoku.
func parseGet(raw string) (getRequest, error) {
	var req getRequest
	q, err := parseQuery(raw)
	if err != nil {
		return req, err
	}
	if err := checkID(q.id); err != nil {
		return req, err
	}
	req.id = q.id
	if !q.hasPuzzle {
		return req, errMissingPuzzle
	}
	var ok bool
	if req.unique, ok = parseBool(q.unique); !ok {
		return req, errUnique
	}
	switch q.format {
	case "":
	case "text":
		req.text, req.format = true, true
	case "json":
		req.format = true
	default:
		return req, errFormat
	}
	if req.grid, err = solver.Parse(q.puzzle); err != nil {
		return req, fmt.Errorf("puzzle: %w", err)
	}
	return req, nil
}

// parseBool reads the unique flag.
func parseBool(s string) (bool, bool) {
	switch s {
	case "", "0", "false", "no":
		return false, true
	case "1", "true", "yes":
		return true, true
	}
	return false, false
}

// readBatch reads a POST body within the size limits and returns its
// puzzle lines, without blank lines and # comments.
func (s *Service) readBatch(r *http.Request) ([][]byte, error) {
	limit := s.cfg.MaxBodyBytes
	if r.ContentLength > limit {
		return nil, tooLarge(fmt.Sprintf("body is %d bytes, limit %d", r.ContentLength, limit))
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return nil, badRequest("reading body: " + err.Error())
	}
	if int64(len(body)) > limit {
		return nil, tooLarge(fmt.Sprintf("body is over the %d-byte limit", limit))
	}
	lines := make([][]byte, 0, bytes.Count(body, []byte{'\n'})+1)
	for len(body) > 0 {
		var line []byte
		line, body, _ = bytes.Cut(body, []byte{'\n'})
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		if len(lines) == s.cfg.MaxBatchLines {
			return nil, tooLarge(fmt.Sprintf("more than %d puzzle lines", s.cfg.MaxBatchLines))
		}
		lines = append(lines, line)
	}
	if len(lines) == 0 {
		return nil, errEmptyBatch
	}
	return lines, nil
}
