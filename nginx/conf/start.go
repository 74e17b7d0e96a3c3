package conf

import (
	"net/netip"

	"sudoku-fcgi/nginx/logs"
)

// Start holds the values of the run directory's files that are written
// once, before nginx starts: every file of RunDirFiles but the upstream's
// (UpstreamFiles) and tls.conf (RenderTLS), which change while it runs.
type Start struct {
	Processes      int // nginx worker processes; < 1 leaves each limit whole (nginx.conf's own count)
	Limits         ProcessLimits
	Clients        ClientLimits
	TrustedClients []netip.Prefix // exempt from the per-client limits
	RealIPFrom     []netip.Prefix // balancers whose header names the client
	HTTPListen     string         // the plain HTTP server's listen; empty writes comments only
	ProxyProtocol  bool           // every public listen takes the PROXY protocol
	AccessLog      logs.AccessLog // the socket of the short access log lines; none without a Path
}

// RenderStart renders the start files for s, by name.
func RenderStart(s Start) (map[string][]byte, error) {
	files := map[string][]byte{}
	var err error
	if files["events.conf"], files["keepalive.conf"], err = renderProcessLimits(s.Limits, s.Processes); err != nil {
		return nil, err
	}
	clients, err := renderClientLimits(s.Clients)
	if err != nil {
		return nil, err
	}
	files["client-limits.conf"], files["route-limits.conf"], files["batch-limits.conf"] = clients[0], clients[1], clients[2]
	if files["trusted-clients.conf"], err = renderTrustedClients(s.TrustedClients); err != nil {
		return nil, err
	}
	if files["real-ip.conf"], err = renderRealIP(s.RealIPFrom, s.ProxyProtocol); err != nil {
		return nil, err
	}
	if files["listen.conf"], err = renderListen(s.HTTPListen, s.ProxyProtocol); err != nil {
		return nil, err
	}
	if files["access-log.conf"], err = renderAccessLog(&s.AccessLog); err != nil {
		return nil, err
	}
	return files, nil
}
