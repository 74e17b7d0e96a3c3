// Package fcgiserver serves any http.Handler over FastCGI, hardened for a
// web server in front (nginx) and for whoever else reaches the socket. It
// runs the standard library's child (net/http/fcgi) on every connection
// and adds what the child lacks: a connection limit in total and per peer,
// bounded per-connection state, buffered reads and one write per answer, a
// Flush that reaches the socket (streamed answers), a say for the handler
// over requests the child cannot parse (MalformedReason), a graceful drain,
// and its own connection metrics.
//
// It knows nothing of what the handler serves.
package fcgiserver
