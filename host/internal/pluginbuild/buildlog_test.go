package pluginbuild

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"
)

// TestBuildLogsDuration: each build from source, a real one and a cache
// hit, is logged at info level as "plugin built" with the operator, the
// source, how long it took and whether the cache had it.
func TestBuildLogsDuration(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Go plugins")
	}
	dir := userModule(t, upperPlugin)
	var buf bytes.Buffer
	opts := Options{CacheDir: t.TempDir(), Logger: slog.New(slog.NewJSONHandler(&buf, nil)), Operator: "upper"}
	for _, tc := range []struct {
		name   string
		cached bool
	}{{"first build", false}, {"cache hit", true}} {
		buf.Reset()
		if _, err := Build(context.Background(), dir, opts); err != nil {
			t.Fatal(err)
		}
		var line struct {
			Level, Msg, Operator, Source string
			Duration                     *time.Duration
			Cached                       bool
		}
		if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
			t.Fatalf("%s: log %q: %v", tc.name, buf.String(), err)
		}
		if line.Level != "INFO" || line.Msg != "plugin built" || line.Operator != "upper" || line.Source != dir || line.Cached != tc.cached || line.Duration == nil {
			t.Errorf("%s: logged %s", tc.name, buf.String())
		}
	}
}
