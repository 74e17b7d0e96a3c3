package admission

import (
	"bytes"
	"embed"
	"fmt"
	"math"
	"strings"
	"text/template"
)

//go:embed templates/*.tmpl
var templateFS embed.FS

var templates = template.Must(template.ParseFS(templateFS, "templates/*.tmpl"))

// Queue is the admission queue nginx runs: limit_req's rate, burst and
// delay, all in requests (per second for Rate).
type Queue struct {
	Rate  int // 0 turns the queue off
	Burst int // requests that may wait: Rate x QueueMax
	Delay int // of those, the first pass at once: Rate x Pass
}

// QueueFor sizes the queue for rate under cfg: burst / rate <= QueueMax,
// so no request waits in nginx longer than that before it is passed or
// turned away, and delay / rate = Pass.
func QueueFor(rate float64, cfg Config) Queue {
	if rate <= 0 || cfg.Off {
		return Queue{}
	}
	r := int(math.Round(rate))
	if r < 1 {
		r = 1
	}
	q := Queue{Rate: r,
		Burst: int(math.Floor(float64(r) * cfg.QueueMax.Seconds())),
		Delay: int(math.Floor(float64(r) * cfg.Pass.Seconds()))}
	if q.Burst < 1 {
		q.Burst = 1
	}
	if q.Delay > q.Burst {
		q.Delay = q.Burst
	}
	return q
}

// Files are the two includes the queue needs: the zone (http level, in
// nginx.conf) and the location's limit_req (in location = /sudoku).
type Files struct {
	Zone, Location []byte
}

// Render renders the includes for q; with Rate 0 both carry comments
// only, and nginx runs without the queue.
func Render(q Queue) (Files, error) {
	var f Files
	for _, t := range []struct {
		name string
		out  *[]byte
	}{{"admission-zone.conf.tmpl", &f.Zone}, {"admission-queue.conf.tmpl", &f.Location}} {
		var buf bytes.Buffer
		if err := templates.ExecuteTemplate(&buf, t.name, q); err != nil {
			return Files{}, fmt.Errorf("rendering %s: %w", t.name, err)
		}
		*t.out = buf.Bytes()
	}
	return f, nil
}

// RenderLog renders the http-level include that sends nginx's short
// access log line (LogFormat) to socket; an empty socket turns it off.
func RenderLog(socket string) ([]byte, error) {
	if strings.ContainsAny(socket, ";{}#\"'\\\n\r$ \t,") {
		return nil, fmt.Errorf("admission: unsafe log socket path %q", socket)
	}
	var data any
	if socket != "" {
		data = struct{ Socket, Format string }{socket, LogFormat}
	}
	var buf bytes.Buffer
	if err := templates.ExecuteTemplate(&buf, "admission-log.conf.tmpl", data); err != nil {
		return nil, fmt.Errorf("rendering admission-log.conf: %w", err)
	}
	return buf.Bytes(), nil
}
