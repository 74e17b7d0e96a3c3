// Package nginx keeps a Debian nginx 1.22 in step with the world around it.
//
// nginx 1.22 cannot re-resolve upstream names and cannot fetch certificates,
// so sudoku-edge does both on its behalf and tells nginx about the result.
// This package is the wiring: its [Supervisor] runs nginx in the
// foreground, keeps the upstream and the certificates in step, counts
// what it does ([Metrics]) and stops nginx gracefully; the command serves
// its ACME challenge handler and the metrics on listeners of its own.
// Each job has a room of its own, and the imports point one way, from
// here to them (cmd/imports_test.go):
//
//   - conf renders the configuration: nginx.conf and the files beside it
//     ([RenderSite] embeds them from this directory) and the run
//     directory's files, one per template in conf/templates;
//   - proc runs the nginx master, restarts it on the listening sockets it
//     holds and applies a change only when `nginx -t` passes;
//   - discover finds the workers and keeps their budget, a round in one
//     call (discover.Discovery.Next);
//   - logs drains nginx's output, counts its answers from the access log
//     and relays its error log;
//   - edgetls keeps the certificates with certmagic and renders tls.conf.
//
// The packages never read environment variables or flags; cmd/sudoku-edge
// parses them (discover.ParseTargets, conf.ParsePrefixes,
// conf.ParseListen, conf.CheckDomain) and wires a Supervisor.
package nginx
