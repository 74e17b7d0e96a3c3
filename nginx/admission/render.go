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

// Files are the two includes: HTTP at http level in nginx.conf (the zone
// with the rate, and the log line for LogCounter), Location inside
// location = /sudoku (the limit_req).
type Files struct {
	HTTP, Location []byte
}

// Render renders the includes for q and the log socket: with Rate 0 no
// queue, with an empty socket no log line; either way nginx starts.
func Render(q Queue, logSocket string) (Files, error) {
	if strings.ContainsAny(logSocket, ";{}#\"'\\\n\r$ \t,") {
		return Files{}, fmt.Errorf("admission: unsafe log socket path %q", logSocket)
	}
	data := struct {
		Queue          Queue
		Socket, Format string
	}{q, logSocket, LogFormat}
	var f Files
	for _, t := range []struct {
		name string
		out  *[]byte
	}{{"admission-http.conf.tmpl", &f.HTTP}, {"admission-queue.conf.tmpl", &f.Location}} {
		var buf bytes.Buffer
		if err := templates.ExecuteTemplate(&buf, t.name, data); err != nil {
			return Files{}, fmt.Errorf("rendering %s: %w", t.name, err)
		}
		*t.out = buf.Bytes()
	}
	return f, nil
}
