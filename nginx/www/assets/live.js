// The live panel: polls GET /sudoku/stats once a second and draws the last
// five minutes per worker as SVG. nginx sends each poll to one worker, so a
// worker's series grows by a point whenever a poll reaches it; a worker that
// has not answered for a while (scaled down, gone) is dropped.
"use strict";

(function () {
  const svgNS = "http://www.w3.org/2000/svg";
  const span = 300e3; // ms of history kept and, at most, drawn
  const minSpan = 60e3; // the x axis spans at least this, growing to span
  const dropAfter = 30e3; // a worker unseen this long is dropped
  const gapAfter = 20e3; // a longer pause between two points breaks the line
  const colours = 8; // .w0 ... .w7 in style.css

  const charts = [
    { el: document.getElementById("chart-rps"), keys: ["rps"] },
    { el: document.getElementById("chart-lat"), keys: ["p99", "p50"] },
    { el: document.getElementById("chart-inflight"), keys: ["inflight"] },
    { el: document.getElementById("chart-503"), keys: ["e503"] },
  ];
  const legend = document.getElementById("legend");
  const status = document.getElementById("live-status");

  // workers: id -> { colour, points: [{t, rps, p50, p99, inflight, e503}], prev, seen, restarts }
  const workers = new Map();
  let answers = 0;
  const opened = Date.now();

  function freeColour() {
    const used = new Set(Array.from(workers.values(), (w) => w.colour));
    for (let c = 0; c < colours; c++) if (!used.has(c)) return c;
    return workers.size % colours;
  }

  const sum = (o) => Object.values(o || {}).reduce((a, b) => a + b, 0);

  // record turns one stats answer into a point. Rates come from the change
  // of the worker's totals over its own uptime since its previous answer;
  // its first answer (or the first after a restart, when the totals start
  // again at zero) uses its 10 s request rate and has no 503 rate.
  function record(j, now) {
    let w = workers.get(j.worker);
    if (!w) {
      w = { colour: freeColour(), points: [], prev: null, seen: now, restarts: 0 };
      workers.set(j.worker, w);
    }
    const t = j.totals || {};
    const cur = {
      uptime: j.uptime_seconds,
      reqs: sum(t) - (t.stats || 0),
      e503: (t.too_busy || 0) + (t.timeout || 0) + (t.draining || 0),
    };
    const p = { t: now, rps: null, p50: null, p99: null, inflight: null, e503: null };
    const prev = w.prev;
    const dt = prev ? cur.uptime - prev.uptime : 0;
    if (prev && cur.uptime < prev.uptime) w.restarts++;
    if (prev && dt > 0 && cur.reqs >= prev.reqs) {
      p.rps = (cur.reqs - prev.reqs) / dt;
      p.e503 = (cur.e503 - prev.e503) / dt;
    } else if (j.requests_per_second) {
      p.rps = j.requests_per_second["10s"];
    }
    if (j.latency_samples > 0 && j.latency_seconds) {
      p.p50 = j.latency_seconds.p50 * 1000;
      p.p99 = j.latency_seconds.p99 * 1000;
    }
    // The poll itself is one of the requests in flight.
    p.inflight = Math.max(0, (j.in_flight || 0) - 1);
    w.prev = cur;
    w.seen = now;
    w.points.push(p);
  }

  function prune(now) {
    for (const [id, w] of workers) {
      if (now - w.seen > dropAfter) workers.delete(id);
      else while (w.points.length > 0 && w.points[0].t < now - span) w.points.shift();
    }
  }

  // niceMax rounds a chart's top up to 1, 2 or 5 times a power of ten.
  function niceMax(v) {
    if (!(v > 0)) return 1;
    const e = Math.pow(10, Math.floor(Math.log10(v)));
    for (const m of [1, 2, 5, 10]) if (v <= m * e) return m * e;
    return 10 * e;
  }

  function label(v) {
    if (v >= 100) return String(Math.round(v));
    if (v >= 1) return String(Math.round(v * 10) / 10);
    return String(Math.round(v * 100) / 100);
  }

  function node(name, attrs, text) {
    const n = document.createElementNS(svgNS, name);
    for (const k in attrs) n.setAttribute(k, attrs[k]);
    if (text !== undefined) n.textContent = text;
    return n;
  }

  const X0 = 34, X1 = 314, Y0 = 6, Y1 = 68;

  function ago(ms) {
    const s = Math.round(ms / 1000);
    return "−" + (s >= 120 ? Math.round(s / 6) / 10 + " min" : s + " s");
  }

  function draw(now) {
    // Until the page has been open five minutes, the axis shows its time so
    // far (at least a minute), so that the first points are not squeezed
    // into the right edge.
    const shown = Math.min(span, Math.max(minSpan, Math.ceil((now - opened) / 30e3) * 30e3));
    for (const ch of charts) {
      let max = 0;
      for (const w of workers.values()) {
        for (const p of w.points) for (const k of ch.keys) if (p[k] !== null && p[k] > max) max = p[k];
      }
      max = niceMax(max);
      const x = (t) => X0 + ((t - (now - shown)) / shown) * (X1 - X0);
      const y = (v) => Y1 - (v / max) * (Y1 - Y0);
      const kids = [];
      for (const f of [0, 0.5, 1]) {
        const yy = y(max * f);
        kids.push(node("line", { class: "grid", x1: X0, x2: X1, y1: yy, y2: yy }));
        kids.push(node("text", { class: "axis", x: X0 - 4, y: yy + 3, "text-anchor": "end" }, label(max * f)));
      }
      kids.push(node("text", { class: "axis", x: X0, y: 80 }, ago(shown)));
      kids.push(node("text", { class: "axis", x: (X0 + X1) / 2, y: 80, "text-anchor": "middle" }, ago(shown / 2)));
      kids.push(node("text", { class: "axis", x: X1, y: 80, "text-anchor": "end" }, "now"));
      let drawn = 0;
      for (const w of workers.values()) {
        ch.keys.forEach((k, ki) => {
          let run = [], last = null;
          const flush = () => {
            if (run.length > 1) {
              kids.push(node("polyline", { class: "series w" + w.colour + (ki > 0 ? " dashed" : ""), points: run.join(" ") }));
            } else if (run.length === 1) {
              const [cx, cy] = run[0].split(",");
              kids.push(node("circle", { class: "dot w" + w.colour, cx: cx, cy: cy, r: 1.8 }));
            }
            run = [];
          };
          for (const p of w.points) {
            if (p[k] === null || p.t < now - shown) continue;
            if (last && p.t - last.t > gapAfter) flush();
            run.push(x(p.t).toFixed(1) + "," + y(Math.min(p[k], max)).toFixed(1));
            last = p;
            drawn++;
          }
          flush();
        });
      }
      ch.el.replaceChildren(...kids);
      ch.el.dataset.points = String(drawn);
    }
    legend.replaceChildren(...Array.from(workers, ([id, w]) => {
      const ago = Math.round((now - w.seen) / 1000);
      const s = document.createElement("span");
      s.className = "w" + w.colour + (ago > 5 ? " stale" : "");
      s.textContent = id + (w.restarts ? " (restarted)" : "") + (ago > 1 ? ", seen " + ago + " s ago" : "");
      return s;
    }));
  }

  async function poll() {
    const started = performance.now();
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(), 3000);
    const now = Date.now();
    try {
      const resp = await fetch("/sudoku/stats", { headers: { Accept: "application/json" }, cache: "no-store", signal: ctl.signal });
      const body = await resp.text();
      if (!resp.ok) {
        let msg = body.trim();
        try { msg = JSON.parse(body).error; } catch (_) { /* not JSON: shown as it is */ }
        status.textContent = "Last poll: " + resp.status + " " + msg + "; polling again every second.";
      } else {
        record(JSON.parse(body), now);
        answers++;
        status.textContent = "";
      }
    } catch (err) {
      status.textContent = "Last poll failed: " + (err.name === "AbortError" ? "no answer within 3 s" : "network error (" + err.message + ")") + "; polling again every second.";
    } finally {
      clearTimeout(timer);
    }
    prune(Date.now());
    if (status.textContent === "") {
      status.textContent = answers + (answers === 1 ? " answer" : " answers") + " so far; " + workers.size + " worker" + (workers.size === 1 ? "" : "s") + " in view.";
    }
    draw(Date.now());
    setTimeout(poll, Math.max(0, 1000 - (performance.now() - started)));
  }

  poll();
})();
