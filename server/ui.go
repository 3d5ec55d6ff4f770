package server

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// UI is a web app for the API, served at [UIPath] (see [WithUI]), such as
// package web's Handler. It is safe for concurrent use.
type UI interface {
	// ServeHTTP answers every method and path under UIPath.
	http.Handler
	// Built reports whether there is an app to serve. A UI that is not
	// built still answers (with how to build it), but GET / does not send
	// browsers to it.
	Built() bool
}

// UIPath is where WithUI's app is served.
const UIPath = "/ui/"

// WithUI serves ui at [UIPath], every method and path under it, outside
// authentication: an app's static files hold no data, and the app asks
// for credentials itself. When ui is built, GET / sends browsers (an Accept
// header naming text/html) to UIPath with 302 Found, and the index in JSON
// links to it (rel "ui"); other callers get the index as before. With
// WithMetrics, cup_ui_requests_total{code} counts ui's answers by status
// class ("2xx", "3xx", "4xx", "5xx"). Of NewStartingHandler's options, it
// serves ui at UIPath while the server starts. Default, and a nil ui: no
// UI; /ui/ is a path like any other, and browsers get a small HTML index
// at GET /.
func WithUI(ui UI) Option { return func(c *config) { c.surface.ui = ui } }

// uiRoute is the UI a Server serves, and its metric.
type uiRoute struct {
	ui    UI
	built bool
	// answers counts answers by status class: answers[2] those of 2xx,
	// up to answers[5]; answers[0] and [1] are unused.
	answers [6]prometheus.Counter
}

// newUIRoute returns the route of cfg's UI, its metric registered with
// cfg.metrics when set, or nil without a UI.
func newUIRoute(cfg *config) (*uiRoute, error) {
	if cfg.surface.ui == nil {
		return nil, nil
	}
	u := &uiRoute{ui: cfg.surface.ui, built: cfg.surface.ui.Built()}
	answers := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "cup_ui_requests_total",
		Help: `Answers of the web UI at /ui/, by status class ("2xx", "3xx", "4xx", "5xx").`,
	}, []string{"code"})
	for class := 2; class < len(u.answers); class++ {
		u.answers[class] = answers.WithLabelValues(fmt.Sprintf("%dxx", class))
	}
	if reg := cfg.metrics; reg != nil {
		if err := reg.Register(answers); err != nil {
			return nil, fmt.Errorf("server: metrics: %w", err)
		}
	}
	return u, nil
}

// route adds the UI to mux, outside api, the authenticated handler of
// everything else, and, when the UI is built, sends browsers asking for /
// to it.
func (u *uiRoute) route(mux *http.ServeMux, api http.Handler) {
	mux.Handle(UIPath, u)
	if !u.built {
		return
	}
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(strings.ToLower(strings.Join(r.Header.Values("Accept"), ",")), "text/html") {
			api.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Vary", "Accept")
		http.Redirect(w, r, UIPath, http.StatusFound)
	})
}

// ServeHTTP serves the UI, counting its answers.
func (u *uiRoute) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sw := &statusWriter{ResponseWriter: w}
	u.ui.ServeHTTP(sw, r)
	class := sw.code / 100
	if sw.code == 0 { // nothing written: net/http answers 200
		class = 2
	}
	if class >= 2 && class < len(u.answers) {
		u.answers[class].Inc()
	}
}

// statusWriter records the status of an answer.
type statusWriter struct {
	http.ResponseWriter
	code int // 0 until written
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 && code >= 200 { // 1xx are interim
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap gives http.ResponseController the writer underneath.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
