package console

import (
	"embed"
	"io/fs"
	"net/http"
	"sync"
	"time"

	"github.com/weir-stream/weir/host"
)

//go:embed assets
var assets embed.FS

// Assets returns a handler serving the console's files (index.html,
// app.js, style.css) from the binary; mount it under /console/. It is
// safe for concurrent use and lives as long as the process.
func Assets() http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	return http.StripPrefix("/console/", http.FileServer(http.FS(sub)))
}

// Page returns a handler serving the console's page, for / and for each
// pipeline's /pipelines/{name}: the page reads which from its address.
// It is safe for concurrent use and lives as long as the process.
func Page() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := assets.ReadFile("assets/index.html")
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
		w.Header().Set("X-Frame-Options", "DENY")
		w.Write(b)
	})
}

// minInterval is the least time between two samples rates are worked
// out from: polls closer together (several tabs) share the last rates.
const minInterval = 900 * time.Millisecond

// Views makes the Views of pipelines, working out rates from the counts
// of successive calls. It is safe for concurrent use; one serves every
// pipeline of an admin server for its lifetime. The zero value is ready.
type Views struct {
	mu   sync.Mutex
	last map[string]*sample // by pipeline
}

// sample is one reading of a pipeline's counts, and the rates worked
// out when it was taken.
type sample struct {
	at    time.Time
	stats host.Stats
	flows []host.StageFlow
	rates []nodeRates // by stage, as Topology
}

// nodeRates are one stage's rates between two samples.
type nodeRates struct {
	in, out, dead, backpressure float64
	p50, p99                    float64
	hasLatency                  bool
}
