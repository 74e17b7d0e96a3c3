// The solver page: the grid, its keyboard, paste, deep links and the batch
// upload. It talks only to the service's public API on this origin.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const board = $("board");
  const statusEl = $("status");
  const cellMsg = $("cell-msg");
  const solveBtn = $("solve-btn");
  const uniqueBtn = $("unique-btn");

  // ---- the grid ---------------------------------------------------------

  // cells[i] is the input of cell i (row i/9, column i%9), as the API counts.
  const cells = [];
  let active = 0;
  // After a solve the grid shows the solution; the givens are remembered so
  // that an edit goes back to the puzzle.
  let shownSolution = false;
  const typeHint = "Type 1 to 9 in a cell; 0, . or Backspace clear it.";

  for (let i = 0; i < 81; i++) {
    const r = Math.floor(i / 9), c = i % 9;
    const el = document.createElement("input");
    el.type = "text";
    el.className = "cell r" + r + " c" + c;
    el.inputMode = "numeric";
    el.autocomplete = "off";
    el.spellcheck = false;
    el.setAttribute("aria-label", "Row " + (r + 1) + ", column " + (c + 1));
    el.tabIndex = i === 0 ? 0 : -1;
    el.dataset.index = String(i);
    el.addEventListener("keydown", onKey);
    el.addEventListener("input", onInput);
    el.addEventListener("focus", () => moveTo(i, false));
    cells.push(el);
    board.appendChild(el);
  }

  function moveTo(i, focus) {
    if (i < 0 || i > 80) return;
    cells[active].tabIndex = -1;
    active = i;
    cells[i].tabIndex = 0;
    if (focus) cells[i].focus();
  }

  // setCell puts one character in cell i ("" for a blank).
  function setCell(i, ch) {
    if (shownSolution) keepGivens();
    clearMarks();
    cells[i].value = ch;
    cells[i].classList.toggle("given", ch !== "");
  }

  // keepGivens removes a shown solution, leaving the puzzle.
  function keepGivens() {
    for (const el of cells) {
      if (!el.classList.contains("given")) el.value = "";
      el.classList.remove("solved");
    }
    shownSolution = false;
  }

  function onKey(e) {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    const i = Number(e.target.dataset.index);
    const k = e.key;
    let handled = true;
    if (k === "ArrowLeft") moveTo(i % 9 === 0 ? i : i - 1, true);
    else if (k === "ArrowRight") moveTo(i % 9 === 8 ? i : i + 1, true);
    else if (k === "ArrowUp") moveTo(i < 9 ? i : i - 9, true);
    else if (k === "ArrowDown") moveTo(i > 71 ? i : i + 9, true);
    else if (k === "Home") moveTo(i - (i % 9), true);
    else if (k === "End") moveTo(i - (i % 9) + 8, true);
    else if (k >= "1" && k <= "9" && k.length === 1) { setCell(i, k); moveTo(Math.min(i + 1, 80), true); }
    else if (k === "0" || k === "." || k === " ") { setCell(i, ""); moveTo(Math.min(i + 1, 80), true); }
    else if (k === "Backspace") { setCell(i, ""); moveTo(Math.max(i - 1, 0), true); }
    else if (k === "Delete") setCell(i, "");
    else if (k === "Enter") solve(false);
    else if (k.length === 1) say(typeHint, "error");
    else handled = false;
    if (handled) e.preventDefault();
  }

  // onInput covers soft keyboards, which type without a usable keydown.
  function onInput(e) {
    const i = Number(e.target.dataset.index);
    const v = e.target.value;
    const ch = v.slice(-1);
    if (ch >= "1" && ch <= "9") { setCell(i, ch); moveTo(Math.min(i + 1, 80), true); }
    else if (ch === "" || ch === "0" || ch === "." || ch === " ") setCell(i, "");
    else { setCell(i, ""); say(typeHint, "error"); }
  }

  // fill shows an 81-character puzzle; any character other than 1-9 and a
  // blank stays in its cell, so that the service can name it.
  function fill(p) {
    const chars = Array.from(p);
    shownSolution = false;
    clearMarks();
    for (let i = 0; i < 81; i++) {
      let ch = chars[i] === undefined ? "" : chars[i];
      if (ch === "0" || ch === "." || ch === " ") ch = "";
      cells[i].value = ch;
      cells[i].classList.toggle("given", ch !== "");
      cells[i].classList.remove("solved");
    }
  }

  // puzzle is the grid as the API takes it: 81 characters, "." for a blank.
  function puzzle() {
    return cells.map((el) => (el.classList.contains("given") && el.value !== "" ? el.value : ".")).join("");
  }

  function showSolution(sol) {
    for (let i = 0; i < 81; i++) {
      const given = cells[i].classList.contains("given");
      cells[i].value = sol[i];
      cells[i].classList.toggle("solved", !given);
    }
    shownSolution = true;
  }

  // parsePasted finds a puzzle in pasted text: one line of 81 characters
  // (an "id:" in front is dropped), or a grid drawn over several lines whose
  // digits, dots and zeros add up to 81 cells. Returns null otherwise.
  function parsePasted(text) {
    const lines = text.replace(/\r/g, "").split("\n").filter((l) => l.trim() !== "");
    if (lines.length === 1) {
      let l = lines[0].replace(/^\s*[^:\s]*:/, "");
      if (Array.from(l).length !== 81) l = l.trim();
      if (Array.from(l).length === 81) return l;
    }
    const cellsOnly = text.replace(/[^0-9.]/g, "");
    if (lines.length > 1 && cellsOnly.length === 81) return cellsOnly;
    return null;
  }

  document.addEventListener("paste", (e) => {
    const text = (e.clipboardData || window.clipboardData).getData("text");
    const p = parsePasted(text);
    const one = text.trim();
    if (p === null && one.length === 1 && e.target.classList.contains("cell")) {
      // One character pasted into a cell is typed there.
      e.preventDefault();
      const i = Number(e.target.dataset.index);
      if (one >= "1" && one <= "9") setCell(i, one);
      else if (one === "0" || one === ".") setCell(i, "");
      else say(typeHint, "error");
      return;
    }
    if (p === null) {
      if (e.target === document.body || e.target.classList.contains("cell")) {
        e.preventDefault();
        say("The pasted text is not a puzzle: want one line of 81 cells (" + Array.from(text.trim()).length + " characters pasted).", "error");
      }
      return;
    }
    e.preventDefault();
    fill(p);
    say("Puzzle pasted. Press Solve.", "");
    moveTo(0, true);
  });

  $("clear-btn").addEventListener("click", () => {
    fill("");
    say("Grid cleared.", "");
    moveTo(0, true);
  });
  solveBtn.addEventListener("click", () => solve(false));
  uniqueBtn.addEventListener("click", () => solve(true));

  // ---- messages and marks ------------------------------------------------

  function say(text, kind) {
    statusEl.textContent = text;
    statusEl.className = "status" + (kind ? " " + kind : "");
  }

  function clearMarks() {
    for (const el of cells) {
      el.classList.remove("bad");
      el.removeAttribute("aria-invalid");
      el.removeAttribute("aria-describedby");
    }
    cellMsg.hidden = true;
    cellMsg.textContent = "";
  }

  // markCells highlights the cells an error names and shows its message
  // next to the first of them.
  function markCells(idx, text) {
    clearMarks();
    for (const i of idx) {
      cells[i].classList.add("bad");
      cells[i].setAttribute("aria-invalid", "true");
      cells[i].setAttribute("aria-describedby", "cell-msg");
    }
    const first = cells[idx[0]];
    cellMsg.textContent = text;
    cellMsg.hidden = false;
    cellMsg.style.left = Math.min(first.offsetLeft, Math.max(0, board.offsetWidth - 200)) + "px";
    cellMsg.style.top = first.offsetTop + first.offsetHeight + 4 + "px";
    moveTo(idx[0], true);
  }

  // cellsOf reads the cells an API error names: "cell 12 (row 2, column 3)"
  // or, for conflicting givens, "row 2 has two 5s" (also column and box).
  function cellsOf(msg, p) {
    let m = /cell (\d+) \(row \d+, column \d+\)/.exec(msg);
    if (m) {
      const i = Number(m[1]) - 1;
      return i >= 0 && i < 81 ? [i] : [];
    }
    m = /(row|column|box) (\d) has two (\d)s/.exec(msg);
    if (!m) return [];
    const n = Number(m[2]) - 1, d = m[3];
    const unit = [];
    for (let k = 0; k < 9; k++) {
      if (m[1] === "row") unit.push(n * 9 + k);
      else if (m[1] === "column") unit.push(k * 9 + n);
      else unit.push((Math.floor(n / 3) * 3 + Math.floor(k / 3)) * 9 + (n % 3) * 3 + (k % 3));
    }
    return unit.filter((i) => p[i] === d);
  }

  // ---- talking to the API -----------------------------------------------

  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

  // retryAfter reads Retry-After in seconds (1 to 30; 1 when absent).
  function retryAfter(resp) {
    const s = Number(resp.headers.get("Retry-After"));
    return Number.isFinite(s) && s >= 1 ? Math.min(s, 30) : 1;
  }

  // errorText is the "error" of a JSON error body, or a short description
  // of a body that is not one.
  async function errorText(resp) {
    const body = await resp.text();
    try {
      const j = JSON.parse(body);
      if (j && typeof j.error === "string") return j.error;
    } catch (_) { /* not JSON: described below */ }
    return "HTTP " + resp.status + (body ? ": " + body.slice(0, 120).trim() : "");
  }

  // send runs one request and, when the service answers 429 or 503, waits
  // Retry-After and tries once more. onBusy tells the user about the wait.
  async function send(url, init, onBusy) {
    let resp = await fetch(url, init);
    if (resp.status === 429 || resp.status === 503) {
      const wait = retryAfter(resp);
      onBusy(await errorText(resp), resp.status, wait);
      await sleep(wait * 1000);
      resp = await fetch(url, init);
    }
    return resp;
  }

  let solving = false;

  async function solve(unique, raw) {
    if (solving) return;
    const p = raw === undefined ? puzzle() : raw;
    if (raw === undefined && !/[^.]/.test(p)) {
      say("The grid is empty: type or paste a puzzle first.", "error");
      return;
    }
    solving = true;
    solveBtn.disabled = uniqueBtn.disabled = true;
    clearMarks();
    say(unique ? "Solving and checking uniqueness…" : "Solving…", "busy");
    const url = "/sudoku?puzzle=" + encodeURIComponent(p) + (unique ? "&unique=1" : "");
    const t0 = performance.now();
    try {
      const resp = await send(url, { headers: { Accept: "application/json" }, cache: "no-store" }, (msg, status, wait) =>
        say("The service is busy (" + status + ": " + msg + "); trying again in " + wait + " s…", "busy"));
      const ms = performance.now() - t0;
      history.replaceState(null, "", "/?puzzle=" + encodeURIComponent(p) + (unique ? "&unique=1" : ""));
      await answer(resp, p, unique, ms);
    } catch (err) {
      say("Network error: the service could not be reached (" + err.message + ").", "error");
    } finally {
      solving = false;
      solveBtn.disabled = uniqueBtn.disabled = false;
    }
  }

  async function answer(resp, p, unique, ms) {
    const took = ms < 10 ? ms.toFixed(1) : Math.round(ms);
    const worker = resp.headers.get("X-Sudoku-Worker");
    const by = worker ? ", worker " + worker : "";
    if (resp.ok) {
      const j = await resp.json();
      showSolution(j.solution);
      if (!unique) say("Solved in " + took + " ms" + by + ".", "ok");
      else if (j.unique) say("Solved in " + took + " ms" + by + ": the solution is unique.", "ok");
      else say("Solved in " + took + " ms" + by + ", but the solution is not unique: this is one of several.", "error");
      return;
    }
    const msg = await errorText(resp);
    switch (resp.status) {
      case 400: {
        const idx = cellsOf(msg, p);
        if (idx.length > 0) markCells(idx, msg);
        say("The service rejected the puzzle (400): " + msg, "error");
        break;
      }
      case 422:
        say("No solution (422): " + msg + ".", "error");
        break;
      case 429:
      case 503:
        say("The service is still busy (" + resp.status + ": " + msg + "). Try again in a moment.", "error");
        break;
      default:
        say("The service answered " + resp.status + ": " + msg, "error");
    }
  }

  // ---- deep link ---------------------------------------------------------

  const params = new URLSearchParams(location.search);
  if (params.has("puzzle")) {
    const p = params.get("puzzle");
    const unique = params.get("unique") === "1";
    fill(p);
    // A link with the wrong length is sent as it is: the service says what
    // is wrong with it.
    solve(unique, Array.from(p).length === 81 ? puzzle() : p);
  }

  // ---- batch -------------------------------------------------------------

  // Chunks stay far inside the service's limits: nginx's and the worker's
  // 1 MiB body (client_max_body_size, -max-body) and the worker's 10,000
  // lines (-max-batch-lines). Two chunks at a time keep both default workers
  // busy while the batch rate limit (20 POSTs/s a client) is never reached.
  const chunkLines = 500;
  const chunkBytes = 256 << 10;
  const parallel = 2;
  // How often lines without an answer are sent again.
  const resendRounds = 2;

  const drop = $("drop");
  const fileInput = $("batch-file");
  const progress = $("batch-progress");
  const batchStatus = $("batch-status");
  const download = $("batch-download");
  let batchRunning = false;

  fileInput.addEventListener("change", () => {
    if (fileInput.files.length > 0) runBatch(fileInput.files[0]);
  });
  for (const ev of ["dragenter", "dragover"]) {
    document.addEventListener(ev, (e) => {
      e.preventDefault();
      drop.classList.add("over");
    });
  }
  document.addEventListener("dragleave", (e) => {
    if (e.target === drop || !drop.contains(e.relatedTarget)) drop.classList.remove("over");
  });
  // A file dropped anywhere on the page is a batch (not a navigation).
  document.addEventListener("drop", (e) => {
    e.preventDefault();
    drop.classList.remove("over");
    const f = e.dataTransfer && e.dataTransfer.files[0];
    if (f) runBatch(f);
  });

  function batchSay(text, kind) {
    batchStatus.textContent = text;
    batchStatus.className = "status" + (kind ? " " + kind : "");
  }

  // badID mirrors the worker's id check: such a line is sent as it is, so
  // that the service answers its error, and matched by its own id.
  function badID(id) {
    return new TextEncoder().encode(id).length > 64 || /[\x00-\x1f\x7f:]/.test(id);
  }

  // Entries: one per puzzle line, in file order. tag is the id the page
  // sends instead of the line's own (answers come in completion order);
  // a line with an id the service rejects keeps it.
  function parseBatch(text) {
    const entries = [];
    for (const raw of text.split("\n")) {
      const line = raw.trim();
      if (line === "" || line[0] === "#") continue;
      const colon = line.lastIndexOf(":");
      const id = colon >= 0 ? line.slice(0, colon) : null;
      const puzzleText = colon >= 0 ? line.slice(colon + 1) : line;
      const n = entries.length;
      const e = { id: id, answer: null, tries: 0 };
      if (id !== null && badID(id)) {
        e.tag = null;
        e.send = line;
      } else {
        e.tag = "b" + n.toString(36);
        e.send = e.tag + ":" + puzzleText;
      }
      entries.push(e);
    }
    return entries;
  }

  function chunksOf(entries) {
    const chunks = [];
    let cur = [], bytes = 0;
    for (const e of entries) {
      const n = e.send.length + 1;
      if (cur.length > 0 && (cur.length >= chunkLines || bytes + n > chunkBytes)) {
        chunks.push(cur);
        cur = [];
        bytes = 0;
      }
      cur.push(e);
      bytes += n;
    }
    if (cur.length > 0) chunks.push(cur);
    return chunks;
  }

  async function runBatch(file) {
    if (batchRunning) {
      batchSay("A batch is still running; wait for it to finish.", "error");
      return;
    }
    batchRunning = true;
    download.hidden = true;
    if (download.href) URL.revokeObjectURL(download.href);
    try {
      const entries = parseBatch(await file.text());
      if (entries.length === 0) {
        batchSay(file.name + " has no puzzle lines ([id:]<81 cells>, one a line).", "error");
        return;
      }
      const tally = { solved: 0, none: 0, errors: 0, busy: 0, done: 0 };
      const show = (final) => {
        progress.max = entries.length;
        progress.value = tally.done;
        batchSay((final ? "Done: " : "") + tally.done + " of " + entries.length + " answered: " +
          tally.solved + " solved, " + tally.none + " no solution, " + tally.errors + " errors" +
          (tally.busy ? ", " + tally.busy + " busy" : "") + ".", final ? (tally.errors || tally.busy ? "error" : "ok") : "busy");
      };
      progress.hidden = false;
      show(false);
      const record = (e, ans) => {
        if (e.answer !== null) return;
        e.answer = ans;
        tally.done++;
        if (ans === "NoSolution") tally.none++;
        else if (ans === "ServerTooBusy") tally.busy++;
        else if (ans.startsWith("error")) tally.errors++;
        else tally.solved++;
        show(false);
      };
      // Lines the service had no time for, and lines a broken answer stream
      // left unanswered (a worker that died mid-batch), go again after a
      // pause, up to resendRounds times; then they keep their last answer.
      let queue = entries;
      const last = new Map();
      for (let round = 0; round <= resendRounds && queue.length > 0; round++) {
        if (round > 0) {
          batchSay(queue.length + " lines were not answered (the service was busy, or an answer stream broke off); sending them again…", "busy");
          await sleep(1000);
        }
        const chunks = chunksOf(queue);
        const again = [];
        const workers = [];
        for (let w = 0; w < parallel; w++) {
          workers.push((async () => {
            for (let c = chunks.shift(); c; c = chunks.shift()) {
              await sendChunk(c, (e, ans, resend) => {
                if (resend || ans === "ServerTooBusy") {
                  last.set(e, ans);
                  again.push(e);
                } else record(e, ans);
              });
            }
          })());
        }
        await Promise.all(workers);
        queue = again;
      }
      for (const e of queue) record(e, last.get(e));
      show(true);
      offerDownload(file.name, entries);
    } catch (err) {
      batchSay("The batch stopped: " + err.message, "error");
    } finally {
      batchRunning = false;
      fileInput.value = "";
    }
  }

  // sendChunk posts one chunk and hands each streamed answer line to onAnswer
  // as soon as it arrives. Lines the service does not answer get an error,
  // with resend set where sending them again may answer them: the request
  // failed on the network, or the answer stream ended before every line.
  // A worker that dies mid-batch closes its FastCGI connection without
  // FCGI_END_REQUEST, and nginx 1.22 (unbuffered FastCGI) takes that for
  // the end of the body: the answer ends as cleanly as a complete one
  // (tests/integration, "dies mid-stream"). The count tells: the service
  // answers every line of a batch it finishes, ServerTooBusy included, so
  // lines still pending at the end are resent. A stream that fails on the
  // way (reader.read() rejects) is resent the same way.
  async function sendChunk(chunk, onAnswer) {
    const byTag = new Map();
    const own = [];
    for (const e of chunk) {
      if (e.tag !== null) byTag.set(e.tag, e);
      else own.push(e);
    }
    const pending = new Set(chunk);
    const take = (line) => {
      let e = own.find((o) => pending.has(o) && line.startsWith(o.id + ":"));
      let ans = e ? line.slice(e.id.length + 1) : null;
      if (!e) {
        const colon = line.indexOf(":");
        e = colon > 0 ? byTag.get(line.slice(0, colon)) : undefined;
        ans = line.slice(colon + 1);
      }
      if (!e || !pending.has(e)) return;
      pending.delete(e);
      onAnswer(e, ans);
    };
    let failure = null;
    let resend = false;
    try {
      const body = chunk.map((e) => e.send).join("\n") + "\n";
      const resp = await send("/sudoku", { method: "POST", body: body, headers: { "Content-Type": "text/plain" }, cache: "no-store" },
        (msg, status, wait) => batchSay("The service is busy (" + status + ": " + msg + "); trying again in " + wait + " s…", "busy"));
      if (!resp.ok) {
        failure = "error: " + (await errorText(resp)) + " (HTTP " + resp.status + ")";
      } else {
        const reader = resp.body.getReader();
        const dec = new TextDecoder();
        let buf = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += dec.decode(value, { stream: true });
          let nl;
          while ((nl = buf.indexOf("\n")) >= 0) {
            take(buf.slice(0, nl));
            buf = buf.slice(nl + 1);
          }
        }
        if (buf !== "") take(buf);
        failure = "error: the service sent no answer for this line";
        resend = true;
      }
    } catch (err) {
      failure = "error: network error (" + err.message + ")";
      resend = true;
    }
    for (const e of pending) onAnswer(e, failure, resend);
  }

  function offerDownload(name, entries) {
    const text = entries.map((e) => (e.id !== null ? e.id + ":" : "") + e.answer).join("\n") + "\n";
    download.href = URL.createObjectURL(new Blob([text], { type: "text/plain" }));
    download.download = name.replace(/\.[^.]*$/, "") + ".answers.txt";
    download.textContent = "Download the answers (" + entries.length + " lines)";
    download.hidden = false;
  }
})();
