// Package nginx keeps a Debian nginx 1.22 in step with the world around it.
//
// nginx 1.22 cannot re-resolve upstream names and cannot fetch certificates,
// so this package does both on its behalf and tells nginx about the result.
// Its one entry point is [Supervisor], the whole edge: it runs nginx in the
// foreground, keeps the upstream and the certificates in step, serves the
// ACME challenge responder and an internal metrics listener ([Metrics]),
// and stops nginx gracefully. Inside, one file per job:
//
//   - process.go runs the nginx master, checks configurations with
//     `nginx -t`, reloads (SIGHUP) and stops it (SIGQUIT).
//   - discovery.go resolves the worker [Target]s again and again;
//     render.go turns a set of addresses into the `server` lines included
//     by the `upstream` block and the concurrency cap of /sudoku.
//   - apply.go is the reload decision: it writes changed files atomically,
//     runs the check, reloads only a configuration that passed it, and puts
//     the old files back when the check fails.
//   - errorlog.go relays nginx's error log and holds back floods of one
//     kind of line (one "no live upstreams" per request turned away).
//   - sockets.go opens nginx's listening sockets in the supervisor, which
//     hands them to every master it starts (the NGINX environment
//     variable), so that a master that dies is restarted without refusing
//     a connection.
//   - accesslog.go counts nginx's answers by status and source from the
//     short access log lines nginx sends to a socket ([AccessLog]).
//   - certs.go keeps TLS certificates with certmagic (ACME, HTTP-01 only)
//     and hands each new pair out as a change; edgetls.go renders tls.conf
//     from the [TLSOptions] and applies the pairs with it.
//
// The files it writes into the run directory are rendered from templates/,
// one file per template, and included by nginx.conf where each applies
// (see [Supervisor.RunDir]). The package never reads environment variables
// or flags; cmd/sudoku-edge parses them ([ParseTargets], [ParsePrefixes],
// [ParseListen], [CheckDomain]) and wires a Supervisor.
package nginx
