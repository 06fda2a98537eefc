package main

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"text/template"

	"github.com/spf13/cobra"

	"github.com/weir-stream/weir/host/plugintool"
)

// templates holds one folder per language: the files of a new plugin,
// rendered with text/template (a ".tmpl" suffix is dropped from a name).
//
//go:embed all:templates
var templates embed.FS

// pluginNameRE is what a new plugin's name must match.
var pluginNameRE = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)

// templateData is what the templates see.
type templateData struct {
	Name    string // the plugin's name
	Root    string // the weir checkout, absolute
	SDKPath string // the language's SDK in it, absolute
}

// templateLangs lists the languages with a template.
func templateLangs() []string {
	entries, _ := templates.ReadDir("templates")
	var langs []string
	for _, e := range entries {
		if e.IsDir() {
			langs = append(langs, e.Name())
		}
	}
	sort.Strings(langs)
	return langs
}

// vendored lists, per language, SDK files copied into every new plugin so
// that it builds outside the checkout.
var vendored = map[string][]string{"c": {"weir.h", "weir.c"}}

func newPluginNewCmd() *cobra.Command {
	var lang, dir, root string
	cmd := &cobra.Command{
		Use:   "new --lang LANG NAME",
		Short: "Create a plugin from a template, with a test",
		Long: `Create the folder NAME (under --dir, default the current directory) holding a
map plugin in LANG that upper-cases a JSON field, and weir-test.jsonl, its
test cases, which weir plugin test runs. Languages: ` + strings.Join(templateLangs(), ", ") + `.

The plugin uses the SDK of a weir checkout: --weir-root, or $WEIR_ROOT, or the
checkout holding the current directory.`,
		Args: exactArgs(1, "the plugin's name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if !pluginNameRE.MatchString(name) {
				return usageErrorf("invalid plugin name %q: want lower-case letters, digits, '-' and '_', starting with a letter", name)
			}
			if !slices.Contains(templateLangs(), lang) {
				return usageErrorf("--lang %q: want one of %s", lang, strings.Join(templateLangs(), ", "))
			}
			if root == "" {
				root = os.Getenv("WEIR_ROOT")
			}
			if root == "" {
				var err error
				if root, err = findWeirRoot(); err != nil {
					return err
				}
			}
			root, err := filepath.Abs(root)
			if err != nil {
				return err
			}
			target := filepath.Join(dir, name)
			if _, err := os.Stat(target); err == nil {
				return fmt.Errorf("%s already exists", target)
			}
			data := templateData{Name: name, Root: root, SDKPath: filepath.Join(root, "guest-sdk", lang)}
			if err := renderTemplate(lang, target, data); err != nil {
				os.RemoveAll(target)
				return err
			}
			for _, f := range vendored[lang] {
				b, err := os.ReadFile(filepath.Join(data.SDKPath, f))
				if err == nil {
					err = os.WriteFile(filepath.Join(target, f), b, 0o644)
				}
				if err != nil {
					os.RemoveAll(target)
					return fmt.Errorf("copying the SDK: %w", err)
				}
			}
			if lang == "go" {
				tidy := exec.CommandContext(cmd.Context(), "go", "mod", "tidy")
				tidy.Dir = target
				if out, err := tidy.CombinedOutput(); err != nil {
					os.RemoveAll(target)
					return fmt.Errorf("go mod tidy in %s: %w\n%s", target, err, out)
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "created %s (%s); try: weir plugin test %s\n", target, lang, target)
			return nil
		},
	}
	cmd.Flags().StringVar(&lang, "lang", "go", "the plugin's language: "+strings.Join(templateLangs(), ", "))
	cmd.Flags().StringVar(&dir, "dir", ".", "where to create the plugin's folder")
	cmd.Flags().StringVar(&root, "weir-root", "", "the weir checkout whose SDK the plugin uses (default $WEIR_ROOT, or the checkout holding the current directory)")
	return cmd
}

// renderTemplate writes templates/<lang> into target, rendering names and
// contents.
func renderTemplate(lang, target string, data templateData) error {
	base := "templates/" + lang
	return fs.WalkDir(templates, base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, base), "/")
		name, err := render(strings.TrimSuffix(rel, ".tmpl"), data)
		if err != nil {
			return fmt.Errorf("template %s: %w", p, err)
		}
		out := filepath.Join(target, filepath.FromSlash(name))
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		b, err := templates.ReadFile(p)
		if err != nil {
			return err
		}
		content, err := render(string(b), data)
		if err != nil {
			return fmt.Errorf("template %s: %w", p, err)
		}
		return os.WriteFile(out, []byte(content), 0o644)
	})
}

func render(text string, data templateData) (string, error) {
	t, err := template.New("").Option("missingkey=error").Parse(text)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return "", err
	}
	return b.String(), nil
}

// findWeirRoot finds the weir checkout holding the current directory or
// this executable.
func findWeirRoot() (string, error) {
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		starts = append(starts, filepath.Dir(exe))
	}
	for _, d := range starts {
		for {
			if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && bytes.HasPrefix(b, []byte("module github.com/weir-stream/weir\n")) {
				return d, nil
			}
			parent := filepath.Dir(d)
			if parent == d {
				break
			}
			d = parent
		}
	}
	return "", errors.New("no weir checkout found for the SDK: pass --weir-root or set $WEIR_ROOT")
}

func newPluginTestCmd(g *globalFlags) *cobra.Command {
	var cases string
	cmd := &cobra.Command{
		Use:   "test PLUGIN [--cases FILE]",
		Short: "Run a plugin's test cases (weir-test.jsonl)",
		Long: `Build PLUGIN if it is a source folder, and run the cases of its test file
(PLUGIN/weir-test.jsonl, or --cases) through it in one batch. The file is JSON
lines: a header {"op":"map"|"flat_map"|"filter"|"aggregate","config":{…}}, then one
case per line {"key":"…","value":"…","want":[…]}, where each wanted output is a
value, "error: <message>", "error:" (any message) or "trap"; an aggregate test
ends with {"result":"…"}, the result of merging the accumulators of the two
halves of the cases, for the group its header may give: "key":"…" and
"window":[start, end] (ms since the epoch), which a plugin that exports
weir_agg_result_ctx gets. It prints each failing case and exits 1 if any
failed.`,
		Args: exactArgs(1, "the plugin (a .wasm file or a source folder)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			plugin := args[0]
			if cases == "" {
				cases = filepath.Join(plugin, "weir-test.jsonl")
				if fi, err := os.Stat(plugin); err == nil && !fi.IsDir() {
					cases = filepath.Join(filepath.Dir(plugin), "weir-test.jsonl")
				}
			}
			f, err := os.Open(cases)
			if err != nil {
				return usageErrorf("no test cases: %v", err)
			}
			tf, err := plugintool.ParseTestFile(f)
			f.Close()
			if err != nil {
				return fmt.Errorf("%s: %w", cases, err)
			}
			res, err := plugintool.Test(cmd.Context(), plugin, tf, g.cacheDir)
			if err != nil {
				return err
			}
			failed := 0
			for _, r := range res {
				if !r.OK {
					failed++
					fmt.Fprintf(cmd.OutOrStdout(), "FAIL %q\n  got  %q\n  want %q\n", r.Case.Value, r.Got, r.Case.Want)
				}
			}
			if failed > 0 {
				return fmt.Errorf("%d of %d cases failed", failed, len(res))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "ok %s: %d cases (%s)\n", path.Base(filepath.ToSlash(plugin)), len(res), tf.Op)
			return nil
		},
	}
	cmd.Flags().StringVar(&cases, "cases", "", "the test file (default PLUGIN/weir-test.jsonl)")
	return cmd
}
