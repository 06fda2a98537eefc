package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/weir-stream/weir/host"
	"github.com/weir-stream/weir/host/admin"
	"github.com/weir-stream/weir/host/broker"
	"github.com/weir-stream/weir/host/plugintool"
	"github.com/weir-stream/weir/state"
)

type globalFlags struct {
	logLevel  string
	logFormat string
	cacheDir  string
}

func newRootCmd() *cobra.Command {
	var g globalFlags
	root := &cobra.Command{
		Use:           "weir",
		Short:         "Run streaming pipelines whose functions are WebAssembly plugins",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&g.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	root.PersistentFlags().StringVar(&g.logFormat, "log-format", "text", "log format on standard error: text or json")
	root.PersistentFlags().StringVar(&g.cacheDir, "cache-dir", "", "directory for built plugins and compiled modules (default $WEIR_CACHE_DIR or the user cache directory)")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newRunCmd(&g), newValidateCmd(&g), newPluginCmd(&g), newBrokerCmd(&g), newProduceCmd(&g), newConsumeCmd(&g), newStateCmd(), newBenchCmd(&g), newVersionCmd())
	return root
}

func (g *globalFlags) logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(g.logLevel)); err != nil {
		return nil, usageErrorf("--log-level %q: want debug, info, warn or error", g.logLevel)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch g.logFormat {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, usageErrorf("--log-format %q: want text or json", g.logFormat)
}

func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			return usageErrorf("want %s, got %d arguments", what, len(args))
		}
		return nil
	}
}

func (g *globalFlags) load(ctx context.Context, cmd *cobra.Command, path string, shared *broker.Broker) (*host.Pipeline, *slog.Logger, error) {
	return g.loadWith(ctx, cmd, path, host.Options{Broker: shared})
}

// loadWith loads a pipeline with opts, filling in the streams, logger and
// cache directory.
func (g *globalFlags) loadWith(ctx context.Context, cmd *cobra.Command, path string, opts host.Options) (*host.Pipeline, *slog.Logger, error) {
	log, err := g.logger(cmd.ErrOrStderr())
	if err != nil {
		return nil, nil, err
	}
	opts.Stdin, opts.Stdout, opts.Stderr = cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()
	opts.Logger, opts.CacheDir = log, g.cacheDir
	p, err := host.Load(ctx, path, opts)
	return p, log, err
}

func newRunCmd(g *globalFlags) *cobra.Command {
	var (
		sequential, watch bool
		adminAddr, token  string
		status            string
	)
	cmd := &cobra.Command{
		Use:   "run PIPELINE [PIPELINE…]",
		Short: "Run pipelines until their input ends, or until SIGINT or SIGTERM",
		Long: `Run one or more pipelines in this process. Results go to the pipelines'
sinks (standard output for a stdout sink) and logs to standard error. The
first SIGINT or SIGTERM stops the sources and drains what was read; a second
one exits at once with code 130.

Plugins reload while the pipelines run, keeping their state: when a plugin's
.wasm file or Go source folder changes (unless --watch=false), and on SIGHUP.
A new version is built, compiled, checked and initialised before it replaces
the old one between batches; if that fails, or if the new version fails on
most records of its first batches (rejects, traps or times out on them, far
more often than the old one did), the old version goes on.

With --admin, an HTTP server gives the web console at / (each pipeline live:
its graph with rates, backpressure and batch times, partitions, watermark,
checkpoints, dead letters, plugins and sink output), /healthz, /readyz,
Prometheus /metrics and the JSON API under /api/v1 (docs/admin-api.md),
which takes POST /api/v1/plugins/reload (see weir plugin reload).

Several pipelines run side by side, or one after another with --sequential,
and share one embedded Kafka broker among those that name no brokers: for
instance a producer, a processing pipeline and a printer, each reading to the
end of its topic (stop_at: latest).`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("want one or more pipeline files, got none")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			// The logs and the status line share standard error: log
			// lines never glue onto the status line.
			cmd.SetErr(newStatusWriter(cmd.ErrOrStderr()))
			ctx, stop := drainOnSignal(cmd.Context())
			defer stop()
			loadCtx := context.WithoutCancel(ctx)
			var shared *broker.Broker
			if len(args) > 1 {
				log, err := g.logger(cmd.ErrOrStderr())
				if err != nil {
					return err
				}
				if shared, err = broker.Start(broker.Options{Logger: log}); err != nil {
					return err
				}
				defer shared.Close()
			}
			var pipes []*host.Pipeline
			var log *slog.Logger
			for _, path := range args {
				p, l, err := g.loadWith(loadCtx, cmd, path, host.Options{Broker: shared, WatchPlugins: watch})
				if err != nil {
					return err
				}
				defer p.Close(loadCtx)
				pipes, log = append(pipes, p), l
			}
			stopReload := reloadOnSIGHUP(ctx, log, pipes)
			defer stopReload()
			if adminAddr != "" {
				if token == "" {
					token = os.Getenv("WEIR_ADMIN_TOKEN")
				}
				srv, err := admin.Start(admin.Options{Listen: adminAddr, Token: token, Logger: log})
				if err != nil {
					return err
				}
				defer srv.Close()
				for _, p := range pipes {
					if err := srv.Register(p); err != nil {
						return err
					}
				}
			}
			stopStatus := startStatusLine(cmd.ErrOrStderr(), status, pipes)
			defer stopStatus()
			if sequential {
				for _, p := range pipes {
					if err := runOne(ctx, log, p); err != nil || ctx.Err() != nil {
						return err
					}
				}
				return nil
			}
			errs := make([]error, len(pipes))
			var wg sync.WaitGroup
			for i, p := range pipes {
				wg.Go(func() { errs[i] = runOne(ctx, log, p) })
			}
			wg.Wait()
			return errors.Join(errs...)
		},
	}
	cmd.Flags().BoolVar(&sequential, "sequential", false, "run the pipelines one after another, each to its end, instead of side by side")
	cmd.Flags().BoolVar(&watch, "watch", true, "reload a plugin when its .wasm file or Go source folder changes")
	cmd.Flags().StringVar(&adminAddr, "admin", "", "serve health, metrics and the pipeline API on this address (\":9600\" listens on 127.0.0.1)")
	cmd.Flags().StringVar(&token, "admin-token", "", "bearer token for the admin API and metrics (or $WEIR_ADMIN_TOKEN); required beyond loopback")
	cmd.Flags().StringVar(&status, "status", "auto", "a live status line on standard error: auto (when it is a terminal), always or never")
	return cmd
}

// reloadOnSIGHUP reloads every plugin of every pipeline on SIGHUP, until
// the returned function is called.
func reloadOnSIGHUP(ctx context.Context, log *slog.Logger, pipes []*host.Pipeline) func() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-ch:
				for _, p := range pipes {
					log.Info("SIGHUP: reloading plugins", "pipeline", p.Name())
					if err := p.ReloadPlugins(ctx, ""); err != nil {
						log.Error("plugin reload failed; the running versions go on", "pipeline", p.Name(), "error", err)
					}
				}
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(ch)
		close(done)
	}
}

// runOne runs one pipeline and logs how it ended, with its summary.
func runOne(ctx context.Context, log *slog.Logger, p *host.Pipeline) error {
	log.Info("pipeline started", "pipeline", p.Name())
	sum, err := p.Run(ctx)
	switch {
	case err != nil:
		log.Error("pipeline failed", "pipeline", p.Name(), "error", err, "summary", sum)
		return err
	case ctx.Err() != nil:
		log.Info("pipeline stopped by signal and drained", "pipeline", p.Name(), "summary", sum)
	default:
		log.Info("pipeline finished", "pipeline", p.Name(), "summary", sum)
	}
	return nil
}

// drainOnSignal returns a context cancelled by the first SIGINT or SIGTERM.
// A second signal exits the process at once.
func drainOnSignal(parent context.Context) (context.Context, func()) {
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithCancel(parent)
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-ch:
			cancel()
		case <-done:
			return
		}
		select {
		case <-ch:
			fmt.Fprintln(os.Stderr, "weir: second signal, exiting without draining")
			os.Exit(exitForced)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel()
	}
}

func newValidateCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "validate PIPELINE",
		Short: "Check a pipeline file and its plugins without running it",
		Long: `Validate a pipeline: the file (every problem is reported with file:line),
then each plugin, which is built if it is Go source, compiled, checked against
the ABI and initialised with its config; with brokers named, that the topics
its Kafka sinks write exist there, or that the brokers create topics on first
use. Nothing reads input.`,
		Args: exactArgs(1, "one pipeline file"),
		RunE: func(cmd *cobra.Command, args []string) error {
			// A throwaway store: validating must not open, or create, the
			// pipeline's state directory.
			p, _, err := g.loadWith(cmd.Context(), cmd, args[0], host.Options{Store: state.NewMemory()})
			if err != nil {
				return err
			}
			defer p.Close(cmd.Context())
			if err := p.CheckKafka(cmd.Context()); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: pipeline %q is valid\n", args[0], p.Name())
			return nil
		},
	}
}

func newPluginCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "plugin", Short: "Build and inspect plugins"}
	var out string
	build := &cobra.Command{
		Use:   "build DIR",
		Short: "Build a plugin source folder (Go, Rust, C or AssemblyScript) to a .wasm module",
		Long: `Build the plugin in DIR, in the language found there: Go files (the Go
toolchain, GOOS=wasip1, -buildmode=c-shared), a Cargo.toml (cargo, for a
Wasm target), C files (clang, wasm32-wasi reactor) or an AssemblyScript
package (asc). Builds are cached by a hash of their sources and the
toolchain's version. The path of the module is printed; with -o it is copied
there.

A folder without the SDK builds against the one embedded in weir: a Go
folder of .go files alone (weir supplies the go.mod), a Rust src/lib.rs
alone (weir supplies the Cargo.toml), a single C file, an AssemblyScript
assembly/index.ts.

Each language's toolchain is found in this order (the log says which was
used, and why):

  go              $WEIR_GO; go on PATH; $GOROOT/bin/go; /usr/local/go/bin/go;
                  /usr/lib/go/bin/go
  rust            $WEIR_CARGO (and $WEIR_RUSTC); cargo on PATH when its rustc
                  has a Wasm target (wasm32-wasip1, wasm32-wasi,
                  wasm32-unknown-unknown); Debian's /usr/bin/cargo (wasm32-wasi,
                  crates offline from /usr/share/cargo/registry)
  c               $WEIR_CLANG; clang on PATH; clang-19 … clang-14 on PATH
  assemblyscript  $WEIR_ASC; the plugin's node_modules/.bin/asc; that of the
                  SDK folder its asconfig.json extends; asc on PATH

weir version --toolchains shows what each would be.`,
		Args: exactArgs(1, "one plugin directory"),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, _, err := plugintool.Build(cmd.Context(), args[0], g.cacheDir)
			if err != nil {
				return err
			}
			if out != "" {
				b, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				if err := os.WriteFile(out, b, 0o644); err != nil {
					return err
				}
				path = out
			}
			fmt.Fprintln(cmd.OutOrStdout(), path)
			return nil
		},
	}
	build.Flags().StringVarP(&out, "output", "o", "", "write the module to this file")

	var asJSON bool
	inspect := &cobra.Command{
		Use:   "inspect PLUGIN",
		Short: "Show what a plugin implements: its kinds, declared fields, ABI, exports and imports",
		Long: `Show a plugin's ABI version, size, the kinds it implements (map, flat_map,
filter, aggregate), the fields it declares (typed plugins, abi/ABI.md §14),
memory, exports and imports, and the problems that would keep weir from
loading it. PLUGIN is a .wasm file, or a source folder, which is built
first. The kinds are those the plugin registered, for a module that
reports them (the weir_ops export of every SDK's modules), and otherwise
those it exports; kinds and fields are asked of the module initialised in
the sandbox with the config {}.`,
		Args: exactArgs(1, "one plugin (a .wasm file or a source folder)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			info, err := plugintool.InspectPlugin(cmd.Context(), args[0], g.cacheDir)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(info)
			}
			printInfo(cmd.OutOrStdout(), info)
			return nil
		},
	}
	inspect.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.AddCommand(build, inspect, newPluginNewCmd(), newPluginTestCmd(g), newPluginReloadCmd(), newPluginPromoteCmd())
	return cmd
}

func printInfo(w io.Writer, info plugintool.Info) {
	if info.Source != "" {
		fmt.Fprintf(w, "source:  %s (%s)\n", info.Source, info.Lang)
	}
	fmt.Fprintf(w, "module:  %s\n", info.Path)
	fmt.Fprintf(w, "size:    %d bytes\n", info.Size)
	if info.ABIVersion > 0 {
		fmt.Fprintf(w, "abi:     v%d\n", info.ABIVersion)
	} else {
		fmt.Fprintf(w, "abi:     none (not a weir plugin)\n")
	}
	ops := strings.Join(info.Ops, ", ")
	if ops == "" {
		ops = "none"
	}
	fmt.Fprintf(w, "ops:     %s\n", ops)
	if len(info.Fields) == 0 {
		fmt.Fprintf(w, "fields:  none (it reads whole records)\n")
	} else {
		fmt.Fprintf(w, "fields:\n")
		for _, f := range info.Fields {
			fmt.Fprintf(w, "  %s\n", f)
		}
	}
	if info.Memory != "" {
		fmt.Fprintf(w, "memory:  %s\n", info.Memory)
	}
	fmt.Fprintf(w, "exports:\n")
	for _, e := range info.Exports {
		fmt.Fprintf(w, "  %s\n", e)
	}
	fmt.Fprintf(w, "imports:\n")
	for _, i := range info.Imports {
		fmt.Fprintf(w, "  %s\n", i)
	}
	if len(info.Problems) > 0 {
		fmt.Fprintf(w, "problems (weir would not load it):\n")
		for _, p := range info.Problems {
			fmt.Fprintf(w, "  %s\n", p)
		}
	}
}

// newPluginReloadCmd asks a running weir's admin server to reload plugins,
// and prints what happened to each operator.
func newPluginReloadCmd() *cobra.Command {
	var addr, pipeline, token string
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "reload --admin ADDR [--pipeline NAME] [--wait DURATION] [OPERATOR]",
		Short: "Reload the plugins of a running weir (through its admin server)",
		Long: `Ask the weir run serving --admin ADDR to reload the plugin of OPERATOR, or
every plugin, of one pipeline or all, and print, one line per operator, what
happened:

  swapped      the new version runs and passed probation
  on probation the new version runs; its probation was not over within --wait
  rolled back  the new version failed on too many of the records of its
               first batches (rejected, trapped or timed out), and the
               previous version runs again
  refused      the new version did not build, compile, pass the ABI check or
               initialise; the running version goes on
  unchanged    the module is the one running already
  replaced     another reload replaced the new version during its probation

Each plugin is built, compiled, checked and initialised, and swapped in
between batches if it changed. A swapped version is on probation for its
first 10 batches; the command waits up to --wait for the probation to end,
so that it can say whether the version stays (--wait 0 answers at once).
It exits 1 if a version was refused or rolled back, with the reasons on
standard error.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if addr == "" {
				return usageErrorf("--admin is required")
			}
			if wait < 0 || wait > 5*time.Minute {
				return usageErrorf("--wait %s: want from 0s to 5m", wait)
			}
			q := url.Values{"wait": {wait.String()}}
			// Building a Go plugin can take a while on a cold cache.
			ctx, cancel := context.WithTimeout(cmd.Context(), wait+5*time.Minute)
			defer cancel()
			resp, err := postAdmin(ctx, addr, token, "reload", pipeline, args, q)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			raw, err := io.ReadAll(resp.Body)
			if err != nil {
				return fmt.Errorf("reload: reading the answer: %w", err)
			}
			var body struct {
				Results []host.ReloadResult `json:"results"`
				Error   string              `json:"error"`
			}
			if json.Unmarshal(raw, &body) != nil || body.Results == nil {
				// A refusal (404, 401, 421…): JSON with an error, or text.
				msg := body.Error
				if msg == "" {
					msg = strings.TrimSpace(string(raw))
				}
				if msg == "" {
					msg = resp.Status
				}
				return fmt.Errorf("reload: %s", msg)
			}
			if len(body.Results) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no plugin operator to reload")
			}
			var failed []string
			for _, r := range body.Results {
				if r.Failed() {
					failed = append(failed, r.String())
					continue
				}
				fmt.Fprintln(cmd.OutOrStdout(), r.String())
			}
			if len(failed) > 0 {
				return fmt.Errorf("reload: %s", strings.Join(failed, "\n"))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "admin", "", "the admin server's address, host:port (required)")
	cmd.Flags().StringVar(&pipeline, "pipeline", "", "only this pipeline")
	cmd.Flags().StringVar(&token, "token", "", "bearer token (or $WEIR_ADMIN_TOKEN)")
	cmd.Flags().DurationVar(&wait, "wait", 30*time.Second, "how long to wait for a swapped version's probation to end (at most 5m; 0 answers at once)")
	return cmd
}
