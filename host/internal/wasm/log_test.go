package wasm

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/weir-stream/weir/abi"
)

func guestLines(stream string) func(logLine) bool {
	return func(l logLine) bool {
		return l.Attrs["source"] == "guest" && l.Attrs["stream"] == stream
	}
}

func TestGuestLog(t *testing.T) {
	logs := newLogCapture()
	rt := newRuntime(t, nil)
	cfg := watConfig(t, "logger")
	cfg.Logger = logs.logger()
	_, w := mustLoad(t, rt, cfg)
	process(t, w, recs("info line", "warn line"))

	lines := logs.Lines(guestLines(""))
	want := []struct {
		msg   string
		level slog.Level
	}{
		{"logger ready", slog.LevelInfo}, // from weir_init
		{"info line", slog.LevelInfo},
		{"warn line", slog.LevelWarn},
	}
	if len(lines) != len(want) {
		t.Fatalf("guest log lines = %+v", lines)
	}
	for i, l := range lines {
		if l.Msg != want[i].msg || l.Level != want[i].level || l.Attrs["operator"] != "logger" {
			t.Errorf("line %d = %+v, want %q at %v tagged with the operator", i, l, want[i].msg, want[i].level)
		}
	}
}

func TestGuestLogLimits(t *testing.T) {
	tests := []struct {
		name  string
		check func(t *testing.T, logs *logCapture, w *Worker)
	}{
		{
			name: "long lines are truncated",
			check: func(t *testing.T, logs *logCapture, w *Worker) {
				process(t, w, recs(strings.Repeat("x", abi.MaxLogLine+500)))
				lines := logs.Lines(func(l logLine) bool { return strings.HasPrefix(l.Msg, "xxx") })
				if len(lines) != 1 || len(lines[0].Msg) != abi.MaxLogLine || lines[0].Attrs["truncated"] != "true" {
					t.Fatalf("got %d lines; want one of %d bytes marked truncated", len(lines), abi.MaxLogLine)
				}
			},
		},
		{
			name: "lines over the rate limit are dropped and counted",
			check: func(t *testing.T, logs *logCapture, w *Worker) {
				vals := make([]string, 3*logBurst)
				for i := range vals {
					vals[i] = "line"
				}
				process(t, w, recs(vals...))
				logged := len(logs.Lines(func(l logLine) bool { return l.Msg == "line" }))
				dropped := w.Stats().LogDropped
				if logged < logBurst-5 || logged > logBurst+20 || int(dropped) != len(vals)-logged {
					t.Fatalf("logged %d, dropped %d of %d lines; want about %d logged", logged, dropped, len(vals), logBurst)
				}
				w.Close(context.Background())
				reports := logs.Lines(func(l logLine) bool { return strings.Contains(l.Msg, "dropped by the rate limit") })
				if len(reports) == 0 {
					t.Fatal("no report of the dropped lines")
				}
			},
		},
		{
			name: "stdout is logged line by line up to a cap",
			check: func(t *testing.T, logs *logCapture, w *Worker) {
				process(t, w, recs("out one", "out two"))
				lines := logs.Lines(guestLines("stdout"))
				if len(lines) != 2 || lines[0].Msg != "out one" || lines[1].Msg != "out two" || lines[0].Attrs["operator"] != "logger" {
					t.Fatalf("stdout lines = %+v", lines)
				}
				// 100 KiB more, in 1 KiB lines.
				vals := make([]string, 100)
				for i := range vals {
					vals[i] = "o" + strings.Repeat("y", 1023)
				}
				process(t, w, recs(vals...))
				total := 0
				for _, l := range logs.Lines(guestLines("stdout")) {
					total += len(l.Msg) + 1
				}
				if total > guestOutputCap+1024 {
					t.Errorf("logged %d bytes of stdout, over the cap of %d", total, guestOutputCap)
				}
				if n := len(logs.Lines(func(l logLine) bool { return strings.HasPrefix(l.Msg, "guest output truncated") })); n != 1 {
					t.Errorf("%d truncation notices, want 1", n)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs := newLogCapture()
			rt := newRuntime(t, nil)
			cfg := watConfig(t, "logger")
			cfg.Logger = logs.logger()
			_, w := mustLoad(t, rt, cfg)
			tt.check(t, logs, w)
		})
	}
}

func TestGuestStderrLogged(t *testing.T) {
	logs := newLogCapture()
	rt := newRuntime(t, logs.logger()) // the runtime's logger is the default
	_, w := mustLoad(t, rt, watConfig(t, "trap_bang"))
	process(t, w, recs("a", "!boom"))
	lines := logs.Lines(guestLines("stderr"))
	if len(lines) == 0 || lines[0].Msg != "poison record: !boom" || lines[0].Attrs["operator"] != "trap_bang" {
		t.Fatalf("stderr lines = %+v", lines)
	}
	warns := logs.Lines(func(l logLine) bool { return strings.HasPrefix(l.Msg, "record dead-lettered") })
	if len(warns) != 1 || warns[0].Attrs["origin"] != "test[0] offset 1" {
		t.Fatalf("dead-letter warnings = %+v", warns)
	}
}

func TestStderrExcerpt(t *testing.T) {
	tests := []struct {
		name  string
		write []string
		want  string
	}{
		{"nothing", nil, ""},
		{"one line", []string{"oops\n"}, "oops"},
		{"partial line", []string{"no newline"}, "no newline"},
		{
			name: "go panic",
			write: []string{
				"panic: value must not start with '!'\n", "\n", "goroutine 1 [running]:\n",
				"main.f(...)\n", "\t/src/main.go:12\n", "main.g()\n", "\t/src/main.go:20\n",
				"exit status 2\n",
			},
			want: "panic: value must not start with '!'",
		},
		{
			name:  "last lines of many",
			write: []string{"1\n", "2\n", "3\n", "4\n", "5\n", "6\n", "7\n", "8\n", "9\n", "10\n"},
			want:  "7 | 8 | 9 | 10",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGuestOutput(slog.New(slog.DiscardHandler))
			g.stderr.Write([]byte("from an earlier call\n"))
			g.beginCall()
			for _, s := range tt.write {
				g.stderr.Write([]byte(s))
			}
			if got := g.stderrExcerpt(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
