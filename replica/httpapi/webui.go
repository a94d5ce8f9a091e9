package httpapi

import (
	"net/http"

	"github.com/iggo/iggo/replica/webui"
)

// webUI mounts the /ui console (http.web_ui) in front of the API: it calls
// the API from the browser, and its two routes of its own authenticate and
// run commands through this server's credential check and sessions.
func (s *Server) webUI(api http.Handler) (http.Handler, error) {
	opt := webui.Options{Authenticate: s.authenticate, Run: s.request, Logger: s.log.Named("webui")}
	if m := s.b.Metrics(); m != nil && s.cfg.HTTP.Metrics.Enabled {
		opt.Gatherer, opt.MetricsEndpoint = m.Registry(), s.cfg.HTTP.Metrics.Endpoint
	}
	c, err := webui.New(opt)
	if err != nil {
		return nil, err
	}
	return c.Wrap(api), nil
}
