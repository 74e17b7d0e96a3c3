package edgetls

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/rs/zerolog"
	"go.uber.org/zap"
)

func TestZapToZerolog(t *testing.T) {
	var buf bytes.Buffer
	zl := newZapLogger(zerolog.New(&buf).Level(zerolog.InfoLevel)).Named("acme").With(zap.String("issuer", "pebble"))
	zl.Debug("dropped")
	zl.Warn("certificate obtained", zap.String("identifier", "a.example"), zap.Error(errors.New("boom")), zap.Int("n", 3))
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("want exactly one JSON record, got %q: %v", buf.String(), err)
	}
	want := map[string]any{"level": "warn", "logger": "acme", "issuer": "pebble", "identifier": "a.example",
		"error": "boom", "n": float64(3), "message": "certificate obtained"}
	for k, v := range want {
		if rec[k] != v {
			t.Errorf("record[%q] = %v, want %v (record %v)", k, rec[k], v, rec)
		}
	}
}
