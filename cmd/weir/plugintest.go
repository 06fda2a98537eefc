package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/weir-stream/weir/host/plugintool"
)

func newPluginTestCmd(g *globalFlags) *cobra.Command {
	var cases string
	var cmp compareFlags
	cmd := &cobra.Command{
		Use:   "test PLUGIN [--cases FILE] [--compare OTHER --records FILE]",
		Short: "Run a plugin's test cases (weir-test.yaml)",
		Long: `Build PLUGIN if it is a source folder, and run the cases of its test file
through it in one batch: --cases, or weir-test.yaml next to the plugin, or
else weir-test.jsonl. It prints each failing case with its file and line,
and exits 1 if any failed.

weir-test.yaml:

  op: map                       # map, flat_map, filter or aggregate
  config: {field: name}         # handed to the plugin's init as JSON
  cases:
    - name: upper-cases the field
      key: k1                   # optional: the record's key
      timestamp: 1000           # optional: event time, ms since the epoch
      value: {name: ada}        # a mapping, list or number is sent as JSON;
                                # a string is sent as it is
      want: [{name: ADA}]       # the values emitted, in order; JSON values
                                # compare as JSON, strings byte for byte
    - value: {n: 1}
      dead: 'field "name": missing'   # rejected with this message
                                      # (dead: true for any message)
    - value: boom
      trap: true                # the plugin fails on the record

An aggregate's file adds result: (the result of merging the accumulators
of the two halves of the cases) and may give group: {key: k, window:
[start, end]}, the group a plugin exporting weir_agg_result_ctx is told.

weir-test.jsonl, the older format: a header {"op":…,"config":{…}}, then one
case per line {"key":"…","value":"…","want":[…]}, where each wanted output
is a value, "error: <message>", "error:" (any message) or "trap"; an
aggregate test ends with {"result":"…"}, and its header may give "key" and
"window".

With --compare OTHER --records FILE it runs no cases: it replays the records
of FILE (one JSON value per line, as a pipeline's jsonl input) through
PLUGIN and OTHER, two versions of a plugin, and prints each record on which
they differ (what each emitted, rejected or trapped on), as a shadow run
compares them, offline; it exits 1 if any differ. The op and config are the
test file's, or --op and --config.`,
		Args: exactArgs(1, "the plugin (a .wasm file or a source folder)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			plugin := args[0]
			if cases == "" {
				cases = defaultTestFile(plugin)
			}
			if cmp.other != "" {
				return compareVersions(cmd, g, plugin, cases, cmp)
			}
			tf, err := readTestFile(cases)
			if err != nil {
				return err
			}
			res, err := plugintool.Test(cmd.Context(), plugin, tf, g.cacheDir)
			if err != nil {
				return err
			}
			failed := 0
			for _, r := range res {
				if !r.OK {
					failed++
					printFailure(cmd.OutOrStdout(), cases, r)
				}
			}
			if failed > 0 {
				return fmt.Errorf("%d of %d cases failed", failed, len(res))
			}
			shown := plugin
			if abs, err := filepath.Abs(plugin); err == nil {
				shown = abs
			}
			fmt.Fprintf(cmd.OutOrStdout(), "ok %s: %d cases (%s)\n", filepath.Base(shown), len(res), tf.Op)
			return nil
		},
	}
	cmd.Flags().StringVar(&cases, "cases", "", "the test file (default weir-test.yaml, else weir-test.jsonl, beside the plugin)")
	cmd.Flags().StringVar(&cmp.other, "compare", "", "another version of the plugin (a .wasm file or a source folder) to compare with, on --records")
	cmd.Flags().StringVar(&cmp.records, "records", "", "with --compare: the records to replay, one JSON value per line")
	cmd.Flags().StringVar(&cmp.op, "op", "", "with --compare: the operation (default the test file's)")
	cmd.Flags().StringVar(&cmp.config, "config", "", "with --compare: the plugin's config as JSON (default the test file's)")
	return cmd
}

// compareFlags are plugin test's flags for comparing two versions.
type compareFlags struct {
	other, records, op, config string
}

// compareVersions replays the records of cmp.records through plugin and
// cmp.other and prints where they differ, failing if they do. The op and
// config default to those of the test file cases, when it exists.
func compareVersions(cmd *cobra.Command, g *globalFlags, plugin, cases string, cmp compareFlags) error {
	if cmp.records == "" {
		return usageErrorf("--compare needs --records, the records to replay")
	}
	op, config := cmp.op, []byte(cmp.config)
	if tf, err := readTestFile(cases); err == nil {
		if op == "" {
			op = tf.Op
		}
		if len(config) == 0 {
			config = tf.Config
		}
	}
	if op == "" {
		return usageErrorf("--compare needs --op (there is no test file %s to take it from)", cases)
	}
	f, err := os.Open(cmp.records)
	if err != nil {
		return usageErrorf("--records: %v", err)
	}
	ins, err := plugintool.ReadRecords(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", cmp.records, err)
	}
	diffs, err := plugintool.Compare(cmd.Context(), plugin, cmp.other, op, config, ins, g.cacheDir)
	if err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	for _, d := range diffs {
		fmt.Fprintf(w, "DIFF record %d: %s\n  %s: %q\n  %s: %q\n", d.Input+1, d.Value, plugin, d.A, cmp.other, d.B)
	}
	if len(diffs) > 0 {
		return fmt.Errorf("%d of %d records differ", len(diffs), len(ins))
	}
	fmt.Fprintf(w, "same: %d records (%s) through %s and %s\n", len(ins), op, plugin, cmp.other)
	return nil
}

// defaultTestFile is the test file of plugin, a folder or a .wasm file:
// the weir-test.yaml beside it, or else its weir-test.jsonl.
func defaultTestFile(plugin string) string {
	dir := plugin
	if fi, err := os.Stat(plugin); err == nil && !fi.IsDir() {
		dir = filepath.Dir(plugin)
	}
	yamlFile := filepath.Join(dir, "weir-test.yaml")
	if _, err := os.Stat(yamlFile); err == nil {
		return yamlFile
	}
	return filepath.Join(dir, "weir-test.jsonl")
}

// readTestFile parses a test file, YAML or JSON lines by its name.
func readTestFile(name string) (*plugintool.TestFile, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, usageErrorf("no test cases: %v", err)
	}
	defer f.Close()
	var tf *plugintool.TestFile
	if strings.HasSuffix(name, ".jsonl") || strings.HasSuffix(name, ".json") {
		tf, err = plugintool.ParseTestFile(f)
	} else {
		tf, err = plugintool.ParseTestYAML(f)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return tf, nil
}

// printFailure says how a case failed, naming it by file and line.
func printFailure(w io.Writer, file string, r plugintool.CaseResult) {
	where := file
	if r.Case.Line > 0 {
		where = fmt.Sprintf("%s:%d", file, r.Case.Line)
	}
	name := r.Case.Name
	if name == "" {
		name = fmt.Sprintf("%q", r.Case.Value)
	}
	fmt.Fprintf(w, "FAIL %s: %s\n  got  %q\n  want %q\n", where, name, r.Got, r.Case.Want)
}
