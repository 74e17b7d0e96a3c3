package nginx

import "net/http"

// listen starts the supervisor's own HTTP listeners: the challenge
// responder and, when configured, the metrics listener. stop closes both.
func (s *Supervisor) listen() (stop func(), err error) {
	challenge, err := s.ServeHTTP(s.Log, "challenge responder", s.cfg.ChallengeListen, s.tls.ChallengeHandler())
	if err != nil {
		return nil, err
	}
	if s.MetricsListen == "" || s.MetricsHandler == nil {
		return func() { challenge.Close() }, nil
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", s.MetricsHandler)
	metrics, err := s.ServeHTTP(s.Log, "metrics listener", s.MetricsListen, mux)
	if err != nil {
		challenge.Close()
		return nil, err
	}
	return func() { challenge.Close(); metrics.Close() }, nil
}
