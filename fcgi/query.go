package fcgi

import (
	"bytes"
	"errors"
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

var (
	errEscape    = badRequest("query string has an invalid %-escape")
	errSemicolon = badRequest("query string has a ';': separate parameters with '&'")
)

// parseQuery reads a raw query string; the first occurrence of a key wins.
func parseQuery(raw string) (query, error) {
	v, err := url.ParseQuery(raw)
	if err != nil {
		if errors.As(err, new(url.EscapeError)) {
			return query{}, errEscape
		}
		return query{}, errSemicolon
	}
	_, has := v["puzzle"]
	return query{puzzle: v.Get("puzzle"), id: v.Get("id"), unique: v.Get("unique"), format: v.Get("format"), hasPuzzle: has}, nil
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

// getRequest is a checked GET (or HEAD) /sudoku.
type getRequest struct {
	id     string // echoed in every answer once it is known to be valid
	grid   solver.Grid
	unique bool
	format string // "json", "text" or "" (none given)
}

var (
	errUnique    = badRequest("unique must be 0 or 1 (or false/true, no/yes; any case)")
	errFormat    = badRequest("format must be json or text (any case)")
	errBatchJSON = badRequest("a batch answers in text lines: format must be text or absent")
)

// Query values follow one rule: they are read without regard to case, so
// format=TEXT is format=text and unique=Yes is unique=1.

// parseUnique reads the unique flag; absent is false.
func parseUnique(s string) (bool, error) {
	switch strings.ToLower(s) {
	case "", "0", "false", "no":
		return false, nil
	case "1", "true", "yes":
		return true, nil
	}
	return false, errUnique
}

// parseFormat reads format: "json", "text", or "" when absent.
func parseFormat(s string) (string, error) {
	switch f := strings.ToLower(s); f {
	case "", "json", "text":
		return f, nil
	}
	return "", errFormat
}

// parseBatchQuery checks the query of a POST /sudoku: unique=1 asks every
// line whether its solution is unique; only text answers exist.
func parseBatchQuery(raw string) (unique bool, err error) {
	q, err := parseQuery(raw)
	if err != nil {
		return false, err
	}
	if unique, err = parseUnique(q.unique); err != nil {
		return false, err
	}
	if f, err := parseFormat(q.format); err != nil {
		return false, err
	} else if f == "json" {
		return false, errBatchJSON
	}
	return unique, nil
}

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
	if req.unique, err = parseUnique(q.unique); err != nil {
		return req, err
	}
	if req.format, err = parseFormat(q.format); err != nil {
		return req, err
	}
	if req.grid, err = solver.Parse(q.puzzle); err != nil {
		return req, fmt.Errorf("puzzle: %w", err)
	}
	return req, nil
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
