// Package nginx keeps a Debian nginx 1.22 in step with the world around it.
//
// nginx 1.22 cannot re-resolve upstream names and cannot fetch certificates,
// so this package does both on its behalf and tells nginx about the result:
//
//   - [Supervisor] is the whole edge: it runs nginx with the pieces below,
//     keeps the upstream and the certificates in step, serves the ACME
//     challenge responder and an internal metrics listener ([Metrics]), and
//     stops nginx gracefully.
//   - [Process] runs nginx in the foreground, checks configurations with
//     `nginx -t`, reloads (SIGHUP) and stops it gracefully (SIGQUIT).
//   - [Discovery] resolves the worker service name again and again and
//     reports when the set of addresses changes; [RenderUpstream] turns a set
//     into the `server` lines included by the `upstream` block and the
//     admission limit included by the /sudoku location.
//   - [Applier] is the reload decision: it writes changed files atomically,
//     runs the check, reloads only a configuration that passed it, and puts
//     the old files back when the check fails.
//   - [ErrorLog] relays nginx's error log and holds back floods of one
//     kind of line (one "no live upstreams" per request turned away).
//   - [CertManager] keeps TLS certificates with certmagic (ACME, HTTP-01
//     only), exports each new pair for nginx and renders the HTTPS server
//     with [RenderTLS].
//
// The files this package writes are included by nginx.conf:
// servers.conf inside `upstream sudoku_workers { ... }` and tls.conf at http
// level, admission.conf inside the /sudoku location and trusted-clients.conf
// in a geo block. The package never reads environment variables or flags;
// cmd/sudoku-edge wires a Supervisor from them.
package nginx
