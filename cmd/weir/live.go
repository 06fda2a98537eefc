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
	"time"

	"github.com/spf13/cobra"

	"github.com/weir-stream/weir/host"
)

// startStatusLine prints, once a second, a status line per pipeline on w
// (records/s in and out, consumer lag, watermark, errors), overwriting
// itself, when mode is "always", or "auto" and w is a terminal. The
// returned function stops it and clears the line.
func startStatusLine(w io.Writer, mode string, pipes []*host.Pipeline) func() {
	if mode == "never" || (mode != "always" && !isTerminal(w)) {
		return func() {}
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		prev := make([]host.Stats, len(pipes))
		last := time.Now()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				fmt.Fprint(w, "\r\x1b[K")
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
				fmt.Fprint(w, "\r\x1b[K"+strings.Join(parts, " | "))
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}

// statusText is one pipeline's part of the status line.
func statusText(name string, st, prev host.Stats, secs float64) string {
	if st.State == host.StateStandby {
		return name + ": standby (another instance is active in the consumer group)"
	}
	in, out, dead := totals(st)
	pin, pout, _ := totals(prev)
	s := fmt.Sprintf("%s: in %s/s out %s/s", name, rate(in-pin, secs), rate(out-pout, secs))
	if st.ConsumerLag > 0 {
		s += fmt.Sprintf(" lag %d", st.ConsumerLag)
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

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// newPluginReloadCmd asks a running weir's admin server to reload plugins.
func newPluginReloadCmd() *cobra.Command {
	return newAdminCallCmd("reload", "reloaded", false,
		"reload --admin ADDR [--pipeline NAME] [OPERATOR]",
		"Reload the plugins of a running weir (through its admin server)",
		`Ask the weir run serving --admin ADDR to reload the plugin of OPERATOR, or
every plugin, of one pipeline or all. Each is built, compiled, checked and
initialised, and swapped in between batches if it changed; one that fails to
load leaves its running version in place, and the command exits 1 with the
reason.`)
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
			if token == "" {
				token = os.Getenv("WEIR_ADMIN_TOKEN")
			}
			q := url.Values{}
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
			ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Minute)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/plugins/"+action+"?"+q.Encode(), nil)
			if err != nil {
				return err
			}
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return fmt.Errorf("reaching the admin server: %w", err)
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
