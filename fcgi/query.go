package fcgi

import (
	"errors"
	"net/url"
	"strings"
)

// query holds the GET parameters the handler knows; unknown ones are ignored.
type query struct {
	puzzle, id, unique, format string
	hasPuzzle                  bool
}

var errEscape = errors.New("query string has an invalid %-escape")

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

// checkID rejects ids that would break the JSON or line protocol or are
// unreasonably long.
func checkID(id string) string {
	if len(id) > maxIDLen {
		return "id is longer than 64 bytes"
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c < 0x20 || c == 0x7f || c == ':' {
			return "id may not contain control characters or ':'"
		}
	}
	return ""
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
