package main

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"os"
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

// templates holds the files of a new plugin project, rendered with
// text/template (a ".tmpl" suffix is dropped from a name): common/, for
// every project; lang/<lang>/project/, for every project in the language;
// lang/<lang>/<kind>/, the plugin's source; and kind/<kind>/, its test
// cases, pipeline and input, the same in every language.
//
//go:embed all:templates
var templates embed.FS

// pluginNameRE is what a new plugin's name must match.
var pluginNameRE = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)

// templateData is what the templates see.
type templateData struct {
	Name        string // the plugin's name
	Lang        string // its language
	Kind        string // its kind: map, flat_map, filter, aggregate or stateful
	GoDirective string // the go line of a Go plugin's go.mod
}

// templateDirs lists the folders under templates/<dir>, sorted.
func templateDirs(dir string) []string {
	entries, _ := templates.ReadDir(path.Join("templates", dir))
	var names []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != "project" {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names
}

// templateLangs lists the languages with a template.
func templateLangs() []string { return templateDirs("lang") }

// templateKinds lists the kinds of plugin with a template.
func templateKinds() []string { return templateDirs("kind") }

func newPluginNewCmd() *cobra.Command {
	var lang, kind, dir string
	cmd := &cobra.Command{
		Use:   "new [--lang LANG] [--kind KIND] NAME",
		Short: "Create a self-contained plugin project, with test cases and a pipeline",
		Long: `Create the folder NAME (under --dir, default the current directory) holding a
plugin of KIND in LANG, its test cases (weir-test.yaml, which weir plugin
test runs), and a pipeline that runs it (pipeline.yaml, with its input).

Languages: ` + strings.Join(templateLangs(), ", ") + `.
Kinds: map (upper-cases a JSON field, with typed fields), flat_map (splits a
line into words), filter (keeps records whose "n" is even), aggregate (the
average of "n" per window), stateful (counts the records of each key in
keyed state).

The project is self-contained: the SDK comes from this binary and is
written into NAME/weir-sdk, so the folder builds offline, on any machine,
wherever it is moved.`,
		Args: exactArgs(1, "the plugin's name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if !pluginNameRE.MatchString(name) {
				return usageErrorf("invalid plugin name %q: want lower-case letters, digits, '-' and '_', starting with a letter", name)
			}
			if !slices.Contains(templateLangs(), lang) {
				return usageErrorf("--lang %q: want one of %s", lang, strings.Join(templateLangs(), ", "))
			}
			if !slices.Contains(templateKinds(), kind) {
				return usageErrorf("--kind %q: want one of %s", kind, strings.Join(templateKinds(), ", "))
			}
			target := filepath.Join(dir, name)
			if _, err := os.Stat(target); err == nil {
				return fmt.Errorf("%s already exists", target)
			}
			data := templateData{Name: name, Lang: lang, Kind: kind, GoDirective: plugintool.SDKGoDirective}
			if err := writeProject(target, data); err != nil {
				os.RemoveAll(target)
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "created %s (%s %s); try: weir plugin test %s\n", target, lang, kind, target)
			return nil
		},
	}
	cmd.Flags().StringVar(&lang, "lang", "go", "the plugin's language: "+strings.Join(templateLangs(), ", "))
	cmd.Flags().StringVar(&kind, "kind", "map", "the plugin's kind: "+strings.Join(templateKinds(), ", "))
	cmd.Flags().StringVar(&dir, "dir", ".", "where to create the plugin's folder")
	var root string
	cmd.Flags().StringVar(&root, "weir-root", "", "ignored")
	cmd.Flags().MarkDeprecated("weir-root", "the SDK comes from the weir binary; the flag is ignored")
	return cmd
}

// writeProject writes a new plugin project into target: the templates'
// files and the SDK.
func writeProject(target string, data templateData) error {
	for _, base := range []string{"common", "lang/" + data.Lang + "/project", "lang/" + data.Lang + "/" + data.Kind, "kind/" + data.Kind} {
		if _, err := fs.Stat(templates, "templates/"+base); err != nil {
			continue // a language with no project files
		}
		if err := renderTemplate("templates/"+base, target, data); err != nil {
			return err
		}
	}
	if err := plugintool.WriteSDK(data.Lang, filepath.Join(target, plugintool.SDKDirName)); err != nil {
		return fmt.Errorf("writing the SDK: %w", err)
	}
	return nil
}

// renderTemplate writes the template folder base into target, rendering
// names and contents.
func renderTemplate(base, target string, data templateData) error {
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
