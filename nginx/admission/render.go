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

// queue is the admission queue nginx runs: limit_req's rate, burst and
// delay, all in requests (per second for Rate).
type queue struct {
	Rate  int // 0 turns the queue off
	Burst int // requests that may wait: Rate x queueMax
	Delay int // of those, the first pass at once: Rate x pass
}

// queueFor sizes the queue for rate under cfg: burst / rate <= queueMax,
// so no request waits in nginx longer than that before it is passed or
// turned away, and delay / rate = pass.
func queueFor(rate float64, cfg Config) queue {
	if rate <= 0 || cfg.Off {
		return queue{}
	}
	r := int(math.Round(rate))
	if r < 1 {
		r = 1
	}
	q := queue{Rate: r,
		Burst: int(math.Floor(float64(r) * cfg.queueMax.Seconds())),
		Delay: int(math.Floor(float64(r) * cfg.pass.Seconds()))}
	if q.Burst < 1 {
		q.Burst = 1
	}
	if q.Delay > q.Burst {
		q.Delay = q.Burst
	}
	return q
}

// includeFiles are the two includes: HTTP at http level in nginx.conf (the zone
// with the rate, and the log line for LogCounter), Location inside
// location = /sudoku (the limit_req).
type includeFiles struct {
	HTTP, Location []byte
}

// logLines are the access log lines nginx sends to the LogCounter's
// socket: none without a Socket; with Every one per answer, otherwise
// one per sampleEvery requests and one per answer of status 400 and up
// but 429 and 503 (admission-http.conf.tmpl).
type logLines struct {
	Socket string
	Every  bool
}

// SampleEvery is the sampling the template states; nginx.conf's
// $sudoku_one_in_16 picks the requests whose $request_id ends in one hex
// digit of 16.
func (logLines) SampleEvery() int { return sampleEvery }

// sampleEvery is one over the share of requests nginx logs when it does
// not log every answer.
const sampleEvery = 16

// render renders the includes for q and the log lines l: with Rate 0 no
// queue, with an empty socket no log line; either way nginx starts.
func render(q queue, l logLines) (includeFiles, error) {
	if strings.ContainsAny(l.Socket, ";{}#\"'\\\n\r$ \t,") {
		return includeFiles{}, fmt.Errorf("admission: unsafe log socket path %q", l.Socket)
	}
	data := struct {
		Queue  queue
		Log    logLines
		Format string
	}{q, l, logFormat}
	var f includeFiles
	for _, t := range []struct {
		name string
		out  *[]byte
	}{{"admission-http.conf.tmpl", &f.HTTP}, {"admission-queue.conf.tmpl", &f.Location}} {
		var buf bytes.Buffer
		if err := templates.ExecuteTemplate(&buf, t.name, data); err != nil {
			return includeFiles{}, fmt.Errorf("rendering %s: %w", t.name, err)
		}
		*t.out = buf.Bytes()
	}
	return f, nil
}
