package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/weir-stream/weir/host"
)

// startStatusLine prints, once a second, a status line per pipeline on w
// (records/s in and out, consumer lag, watermark, errors), overwriting
// itself, when mode is "always", or "auto" and w is a terminal. When w is
// the *statusWriter the logs write to, log lines never share a line with
// the status. The returned function stops it and clears the line.
func startStatusLine(w io.Writer, mode string, pipes []*host.Pipeline) func() {
	sw, ok := w.(*statusWriter)
	if !ok {
		sw = newStatusWriter(w)
	}
	if mode == "never" || (mode != "always" && !isTerminal(sw.w)) {
		return func() {}
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		defer sw.clear()
		prev := make([]host.Stats, len(pipes))
		last := time.Now()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				secs := now.Sub(last).Seconds()
				last = now
				var parts []string
				for i, p := range pipes {
					st := p.Stats()
					parts = append(parts, statusText(p.Name(), st, prev[i], secs))
					prev[i] = st
				}
				sw.show(fitWidth(strings.Join(parts, " | "), terminalWidth(sw.w)))
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}

// clearLine returns the cursor to the start of the line and erases it.
const clearLine = "\r\x1b[K"

// statusWriter is standard error shared by the logs and the status line:
// while a status line is shown, each write that begins a line first
// erases it, and each write that ends a line draws it again below, so a
// log line never shares a line with the status. With no status shown it
// passes writes through. It is safe for concurrent use.
type statusWriter struct {
	mu      sync.Mutex
	w       io.Writer
	status  string // the status line shown; "" for none
	midLine bool   // the last write did not end its line
}

func newStatusWriter(w io.Writer) *statusWriter { return &statusWriter{w: w} }

// Write implements io.Writer.
func (s *statusWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.status == "" {
		s.midLine = len(p) > 0 && p[len(p)-1] != '\n' || len(p) == 0 && s.midLine
		return s.w.Write(p)
	}
	b := make([]byte, 0, len(clearLine)+len(p)+len(s.status))
	if !s.midLine {
		b = append(b, clearLine...)
	}
	b = append(b, p...)
	s.midLine = len(p) > 0 && p[len(p)-1] != '\n' || len(p) == 0 && s.midLine
	if !s.midLine {
		b = append(b, s.status...)
	}
	if _, err := s.w.Write(b); err != nil {
		return 0, err
	}
	return len(p), nil
}

// show makes line the status line, drawn over the one shown; in the
// middle of a log line, it is drawn once that line ends.
func (s *statusWriter) show(line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status = line
	if !s.midLine {
		io.WriteString(s.w, clearLine+line)
	}
}

// clear erases the status line, if one is shown, and shows none.
func (s *statusWriter) clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.status != "" && !s.midLine {
		io.WriteString(s.w, clearLine)
	}
	s.status = ""
}

// fitWidth cuts line to fewer than width columns (counting runes), so
// that it never wraps: erasing a wrapped line would leave its first part.
// width 0 (unknown) leaves it whole.
func fitWidth(line string, width int) string {
	if width <= 1 {
		return line
	}
	r := []rune(line)
	if len(r) < width {
		return line
	}
	return string(r[:width-2]) + "…"
}

// terminalWidth returns the width of the terminal w is, or 0.
func terminalWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok {
		return 0
	}
	width, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return 0
	}
	return width
}

// statusText is one pipeline's part of the status line.
func statusText(name string, st, prev host.Stats, secs float64) string {
	switch {
	case st.State == host.StateStandby:
		return name + ": standby (another instance is active in the consumer group)"
	case st.State == host.StateRestoring && st.Restore != nil:
		r := st.Restore
		return fmt.Sprintf("%s: restoring state from the changelog: %d records replayed, %d left over %d tasks, about %s to go",
			name, r.Replayed, r.Left, len(r.Tasks), time.Duration(r.EtaSeconds*float64(time.Second)).Round(time.Second))
	}
	in, out, dead := totals(st)
	pin, pout, _ := totals(prev)
	s := fmt.Sprintf("%s: in %s/s out %s/s", name, rate(in-pin, secs), rate(out-pout, secs))
	if st.ConsumerLag != nil && *st.ConsumerLag > 0 {
		s += fmt.Sprintf(" lag %d", *st.ConsumerLag)
	}
	if st.Tasks != nil {
		s += fmt.Sprintf(" tasks %d", len(st.Tasks))
		if st.Repartition == host.RepartitionInProcess {
			s += " (routed in process)"
		}
	}
	if st.Watermark != nil {
		s += " wm " + time.UnixMilli(*st.Watermark).UTC().Format("15:04:05")
	}
	if dead > 0 || st.DeadLetter > 0 {
		s += fmt.Sprintf(" errors %d", st.DeadLetter)
	}
	return s
}

// totals sums what the sources read, what the sinks wrote and what was
// rejected.
func totals(st host.Stats) (in, out, dead int64) {
	for _, s := range st.Stages {
		switch s.Stage {
		case "source":
			in += s.Out
		case "sink":
			out += s.Out
		}
		dead += s.Dead
	}
	return in, out, dead
}

func rate(n int64, secs float64) string {
	r := float64(n) / max(secs, 0.001)
	switch {
	case r >= 1e6:
		return fmt.Sprintf("%.1fM", r/1e6)
	case r >= 1e3:
		return fmt.Sprintf("%.1fk", r/1e3)
	}
	return fmt.Sprintf("%.0f", r)
}

// isTerminal reports whether w is a terminal (a *statusWriter is, when
// what it writes to is).
func isTerminal(w io.Writer) bool {
	if sw, ok := w.(*statusWriter); ok {
		w = sw.w
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// newPluginPromoteCmd asks a running weir to promote a shadow plugin.
func newPluginPromoteCmd() *cobra.Command {
	return newAdminCallCmd("promote", "promoted", true,
		"promote --admin ADDR [--pipeline NAME] OPERATOR",
		"Make an operator's shadow plugin its live version (through the admin server)",
		`Ask the weir run serving --admin ADDR to promote the shadow plugin of
OPERATOR (its "shadow:" candidate, whose outputs /api/plugins compares with
the live version's): it is loaded with the operator's state and swapped in
between batches, and the shadow run ends.`)
}

// newAdminCallCmd makes a command that POSTs to /api/plugins/<action> of a
// running weir's admin server.
func newAdminCallCmd(action, done string, needOperator bool, use, short, long string) *cobra.Command {
	var addr, pipeline, token string
	args := cobra.MaximumNArgs(1)
	if needOperator {
		args = exactArgs(1, "the operator")
	}
	cmd := &cobra.Command{
		Use: use, Short: short, Long: long, Args: args,
		RunE: func(cmd *cobra.Command, args []string) error {
			if addr == "" {
				return usageErrorf("--admin is required")
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Minute)
			defer cancel()
			resp, err := postAdmin(ctx, addr, token, action, pipeline, args, url.Values{})
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			var body struct {
				Error string `json:"error"`
			}
			json.NewDecoder(resp.Body).Decode(&body)
			if resp.StatusCode != http.StatusOK {
				if body.Error == "" {
					body.Error = resp.Status
				}
				return fmt.Errorf("%s: %s", action, body.Error)
			}
			fmt.Fprintln(cmd.OutOrStdout(), done)
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "admin", "", "the admin server's address, host:port (required)")
	cmd.Flags().StringVar(&pipeline, "pipeline", "", "only this pipeline")
	cmd.Flags().StringVar(&token, "token", "", "bearer token (or $WEIR_ADMIN_TOKEN)")
	return cmd
}

// postAdmin posts to /api/plugins/ACTION on the admin server at addr
// ("host:port", ":port" for 127.0.0.1, or a URL), with the token (or
// $WEIR_ADMIN_TOKEN), the pipeline and the operator in args (when given)
// added to q.
func postAdmin(ctx context.Context, addr, token, action, pipeline string, args []string, q url.Values) (*http.Response, error) {
	if token == "" {
		token = os.Getenv("WEIR_ADMIN_TOKEN")
	}
	if pipeline != "" {
		q.Set("pipeline", pipeline)
	}
	if len(args) == 1 {
		q.Set("operator", args[0])
	}
	base := addr
	if !strings.Contains(base, "://") {
		if strings.HasPrefix(base, ":") {
			base = "127.0.0.1" + base
		}
		base = "http://" + base
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/plugins/"+action+"?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reaching the admin server: %w", err)
	}
	return resp, nil
}
