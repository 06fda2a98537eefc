package main

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/weir-stream/weir/host"
	"github.com/weir-stream/weir/host/statetool"
)

func newStateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "state",
		Short: "Inspect, export and import a stopped pipeline's keyed state",
		Long: `Tools for the keyed state of a pipeline with state.backend: badger: look at
it, save it to a file and load it back (a savepoint). Each reads the pipeline
file for its name, operators and state.dir, and refuses while the pipeline is
running (its state directory is locked): stop it first.

The state shown and exported is the state the pipeline's next run starts
from: as of its last committed checkpoint, if it takes checkpoints.
A Wasm operator's state is keyed by operator name and the slot names its
plugin uses (abi/ABI.md), not by the plugin's code, so it survives a plugin
upgrade as long as the operator keeps its name: stop the pipeline, export a
savepoint to go back to, change the plugin, and run again.`,
	}
	cmd.AddCommand(newStateInspectCmd(), newStateExportCmd(), newStateImportCmd())
	return cmd
}

func newStateInspectCmd() *cobra.Command {
	var operator, key string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "inspect PIPELINE",
		Short: "Show a stopped pipeline's state: operators, keys, or one key's entries",
		Long: `Show the state of a stopped pipeline, read-only (nothing in the state
directory changes), and its last checkpoint: epoch, watermark and where each
source resumes.

  weir state inspect PIPELINE                          operators, with counts
  weir state inspect PIPELINE --operator OP            OP's record keys
  weir state inspect PIPELINE --operator OP --key K    K's entries in OP

An entry's user key is decoded where its convention is known: a plugin's
ValueState (value "name") and MapState (map "name" ["key"]) slots, a window's
panes, sessions and count windows with their event times, a rolling
operator's header and rows; anything else shows as raw bytes. A value that is
UTF-8 JSON is shown as is; any other value in hex (0x…), with, for 8 bytes,
the SDK number helpers' readings (little-endian int64 and float64).

--key is the record key's text; --key "" is the empty key, under which
windows also keep the state of records without a key. With --json every
line is a JSON object: first {"pipeline","state_dir","checkpoint"}, then one
per operator, key or entry (values as "value" JSON or "value_hex").`,
		Args: exactArgs(1, "one pipeline file"),
		RunE: func(cmd *cobra.Command, args []string) error {
			keyGiven := cmd.Flags().Changed("key")
			if keyGiven && operator == "" {
				return usageErrorf("--key needs --operator")
			}
			sv, err := statetool.Open(args[0])
			if err != nil {
				return err
			}
			defer sv.Close()
			out := &inspectOut{w: cmd.OutOrStdout(), json: asJSON}
			cp, err := sv.Checkpoint()
			if err != nil {
				return err
			}
			out.header(sv, cp)
			switch {
			case operator == "":
				ops, err := sv.Operators()
				if err != nil {
					return err
				}
				out.operators(ops)
			case !keyGiven:
				keys, err := sv.Keys(operator)
				if err != nil {
					return err
				}
				out.keys(operator, keys)
			default:
				entries, err := sv.Entries(operator, []byte(key))
				if err != nil {
					return err
				}
				out.entries(operator, []byte(key), entries)
			}
			return out.err
		},
	}
	cmd.Flags().StringVar(&operator, "operator", "", "list this operator's record keys")
	cmd.Flags().StringVar(&key, "key", "", "with --operator: show this record key's entries")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON lines")
	return cmd
}

func newStateExportCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "export PIPELINE",
		Short: "Write a stopped pipeline's state and last checkpoint to a file",
		Long: `Write the state of a stopped pipeline, as of its last committed checkpoint,
with that checkpoint (source positions, watermark), to standard output or,
with -o, to FILE: a savepoint that 'weir state import' loads into an empty
state directory, here or elsewhere. The state directory is not modified.

The file is JSON lines: a header
  {"format":"weir-state-v1","pipeline":"NAME","checkpoint":{…} or null}
then one line per entry, {"k":"…","v":"…"}: the store key and value in
base64. The number of entries is reported on standard error.`,
		Args: exactArgs(1, "one pipeline file"),
		RunE: func(cmd *cobra.Command, args []string) error {
			w := cmd.OutOrStdout()
			var f *os.File
			if out != "" {
				var err error
				// Write beside the target and rename, so a failed export
				// leaves no half file behind.
				if f, err = os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".tmp-"); err != nil {
					return err
				}
				defer func() {
					f.Close()
					os.Remove(f.Name())
				}()
				w = f
			}
			n, err := statetool.Export(cmd.Context(), args[0], w)
			if err != nil {
				return err
			}
			if f != nil {
				if err := f.Close(); err != nil {
					return err
				}
				if err := os.Rename(f.Name(), out); err != nil {
					return err
				}
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "weir: exported %d state entries\n", n)
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the state file here instead of standard output")
	return cmd
}

func newStateImportCmd() *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "import PIPELINE FILE",
		Short: "Load a state file into a stopped pipeline's empty state directory",
		Long: `Load a state file written by 'weir state export' (FILE, or - for standard
input) into the pipeline's state directory, which must be absent or empty,
and commit the file's checkpoint: the pipeline's next run resumes from it —
a Kafka source at the exported offsets, windows and plugin state as they
were. A file whose pipeline name differs is refused.

The entries are written to a new directory beside the state directory,
which replaces it only once all of them are in: a malformed file (the error
names its line) leaves the state directory as it was.

--force imports a file of another pipeline, and replaces the state in a
non-empty state directory (one holding badger state; nothing else is ever
deleted).`,
		Args: exactArgs(2, "a pipeline file and a state file"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var r io.Reader = cmd.InOrStdin()
			if args[1] != "-" {
				f, err := os.Open(args[1])
				if err != nil {
					return err
				}
				defer f.Close()
				r = f
			}
			n, err := statetool.Import(cmd.Context(), args[0], r, force)
			if err != nil {
				if args[1] != "-" && !errors.Is(err, host.ErrConfig) {
					err = fmt.Errorf("%s: %w", args[1], err)
				}
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "imported %d state entries\n", n)
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "import another pipeline's file, and replace existing state")
	return cmd
}

// inspectOut prints inspect's results as text or JSON lines, keeping the
// first write error.
type inspectOut struct {
	w    io.Writer
	json bool
	err  error
}

func (o *inspectOut) emit(v any) {
	if o.err != nil {
		return
	}
	b, err := json.Marshal(v)
	if err == nil {
		_, err = o.w.Write(append(b, '\n'))
	}
	o.err = err
}

func (o *inspectOut) printf(format string, args ...any) {
	if o.err == nil {
		_, o.err = fmt.Fprintf(o.w, format, args...)
	}
}

func (o *inspectOut) table(header string, rows func(w io.Writer)) {
	if o.err != nil {
		return
	}
	tw := tabwriter.NewWriter(o.w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	rows(tw)
	o.err = tw.Flush()
}

func (o *inspectOut) header(sv *statetool.View, cp *statetool.Checkpoint) {
	if o.json {
		o.emit(struct {
			Pipeline   string                `json:"pipeline"`
			StateDir   string                `json:"state_dir"`
			Checkpoint *statetool.Checkpoint `json:"checkpoint"`
		}{sv.Pipeline(), sv.Dir(), cp})
		return
	}
	o.printf("pipeline:   %s\nstate dir:  %s\n", sv.Pipeline(), sv.Dir())
	if cp == nil {
		o.printf("checkpoint: none\n")
	} else {
		wm := "none"
		if cp.Watermark != math.MinInt64 {
			wm = fmt.Sprintf("%s (%d)", msTime(cp.Watermark), cp.Watermark)
		}
		o.printf("checkpoint: epoch %d, watermark %s, store version %d\n", cp.Epoch, wm, cp.Version)
		for _, s := range cp.Sources {
			if len(s.Position) > 0 {
				o.printf("  source %s resumes at %s\n", s.Name, s.Position)
			} else {
				o.printf("  source %s resumes after %d records\n", s.Name, s.Records)
			}
		}
		switch n := len(cp.ChangelogOffsets); {
		case n == 1:
			o.printf("  changelog replays from offset %d\n", cp.ChangelogOffsets[0])
		case n > 1:
			o.printf("  changelog replays its %d partitions from offsets %v\n", n, cp.ChangelogOffsets)
		}
		if cp.Uncommitted > 0 {
			o.printf("  a later checkpoint (version %d) was prepared but not committed: the next run rolls it back\n", cp.Uncommitted)
		}
	}
	o.printf("\n")
}

func (o *inspectOut) operators(ops []statetool.OperatorState) {
	if o.json {
		for _, op := range ops {
			o.emit(op)
		}
		return
	}
	if len(ops) == 0 {
		o.printf("no state\n")
		return
	}
	o.table("OPERATOR\tTYPE\tKEYS\tENTRIES", func(w io.Writer) {
		for _, op := range ops {
			typ := op.Type
			if typ == "" {
				typ = "(not in the pipeline)"
			}
			fmt.Fprintf(w, "%s\t%s\t%d\t%d\n", op.Operator, typ, op.Keys, op.Entries)
		}
	})
}

// keyFields returns a record key as JSON fields: "key" when it is UTF-8,
// else "key_hex".
func keyFields(k []byte) map[string]any {
	if utf8.Valid(k) {
		return map[string]any{"key": string(k)}
	}
	return map[string]any{"key_hex": hex.EncodeToString(k)}
}

func (o *inspectOut) keys(operator string, keys []statetool.KeyState) {
	if o.json {
		for _, k := range keys {
			m := keyFields(k.Key)
			m["operator"], m["entries"] = operator, k.Entries
			o.emit(m)
		}
		return
	}
	if len(keys) == 0 {
		o.printf("operator %s has no state\n", operator)
		return
	}
	o.table("KEY\tENTRIES", func(w io.Writer) {
		for _, k := range keys {
			fmt.Fprintf(w, "%s\t%d\n", strconv.Quote(string(k.Key)), k.Entries)
		}
	})
}

func (o *inspectOut) entries(operator string, key []byte, entries []statetool.Entry) {
	if o.json {
		for i := range entries {
			m := entries[i].Fields()
			maps.Copy(m, keyFields(key))
			m["operator"] = operator
			o.emit(m)
		}
		return
	}
	if len(entries) == 0 {
		o.printf("operator %s has no state for key %s\n", operator, strconv.Quote(string(key)))
		return
	}
	o.table("ENTRY\tVALUE", func(w io.Writer) {
		for i := range entries {
			e := &entries[i]
			fmt.Fprintf(w, "%s\t%s\n", e.Describe(), valueText(e))
		}
	})
}

func isJSON(v []byte) bool { return utf8.Valid(v) && json.Valid(v) }

// maxValueText bounds the bytes of a value inspect prints as text.
const maxValueText = 512

// valueText shows a value: as is if it is UTF-8 JSON, else in hex; an
// 8-byte plugin state value also as the SDK helpers' numbers.
func valueText(e *statetool.Entry) string {
	v := e.Value
	if isJSON(v) {
		if len(v) > maxValueText {
			return fmt.Sprintf("%s… (%d bytes)", v[:maxValueText], len(v))
		}
		return string(v)
	}
	if len(v) > maxValueText {
		return fmt.Sprintf("0x%x… (%d bytes)", v[:maxValueText], len(v))
	}
	s := "0x" + hex.EncodeToString(v)
	if len(v) == 8 && (e.Kind == "value" || e.Kind == "map") {
		u := binary.LittleEndian.Uint64(v)
		s += fmt.Sprintf(" (int64 %d, float64 %g)", int64(u), math.Float64frombits(u))
	}
	return s
}

// msTime formats ms since the Unix epoch as RFC 3339 in UTC.
func msTime(ms int64) string {
	return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano)
}
