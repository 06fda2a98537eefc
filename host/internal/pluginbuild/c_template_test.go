package pluginbuild_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"text/template"

	"github.com/weir-stream/weir/host"
)

// TestCTemplate renders the template of `weir plugin new --lang c` as the
// command does (every file's name and content through text/template), adds
// the vendored SDK (weir.h and weir.c, which the command copies from
// guest-sdk/c), builds the plugin and runs its weir-test.jsonl.
func TestCTemplate(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a C plugin")
	}
	if _, err := exec.LookPath("clang"); err != nil {
		t.Skip("no clang")
	}
	root := repoRoot(t)
	tmpl := filepath.Join(root, "cmd", "weir", "templates", "c")
	dir := filepath.Join(t.TempDir(), "shout")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	data := struct{ Name string }{Name: "shout"}
	entries, err := os.ReadDir(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := render(t, e.Name(), e.Name(), data)
		content := render(t, e.Name(), mustRead(t, filepath.Join(tmpl, e.Name())), data)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"weir.h", "weir.c"} {
		b := mustRead(t, filepath.Join(root, "guest-sdk", "c", f))
		if err := os.WriteFile(filepath.Join(dir, f), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	runTestFile(t, dir, filepath.Join(dir, "weir-test.jsonl"))
}

func render(t *testing.T, name, text string, data any) string {
	t.Helper()
	tp, err := template.New(name).Parse(text)
	if err != nil {
		t.Fatalf("template %s: %v", name, err)
	}
	var b bytes.Buffer
	if err := tp.Execute(&b, data); err != nil {
		t.Fatalf("template %s: %v", name, err)
	}
	return b.String()
}

// runTestFile runs a weir-test.jsonl file against the plugin in dir.
func runTestFile(t *testing.T, dir, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var head struct {
		Op     string          `json:"op"`
		Config json.RawMessage `json:"config"`
	}
	type testCase struct {
		Key    *string  `json:"key"`
		Value  *string  `json:"value"`
		Want   []string `json:"want"`
		Result *string  `json:"result"`
	}
	var cases []testCase
	var result *string
	sc := bufio.NewScanner(f)
	for n := 0; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if n == 0 {
			if err := json.Unmarshal([]byte(line), &head); err != nil || head.Op == "" {
				t.Fatalf("header %s: %v", line, err)
			}
			continue
		}
		var c testCase
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("case %s: %v", line, err)
		}
		if c.Result != nil {
			result = c.Result
			continue
		}
		cases = append(cases, c)
	}
	var ins []host.PluginInput
	for _, c := range cases {
		var in host.PluginInput
		if c.Key != nil {
			in.Key = []byte(*c.Key)
		}
		if c.Value != nil {
			in.Value = []byte(*c.Value)
		}
		ins = append(ins, in)
	}
	outs, err := host.RunPlugin(context.Background(), dir, head.Op, head.Config, ins, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	got := make([][]string, len(cases))
	var gotResult *string
	for _, o := range outs {
		switch {
		case o.Input < 0:
			r := string(o.Value)
			gotResult = &r
		case o.Error != "":
			got[o.Input] = append(got[o.Input], "error: "+o.Error)
		case o.Trap != "":
			got[o.Input] = append(got[o.Input], "trap")
		default:
			got[o.Input] = append(got[o.Input], string(o.Value))
		}
	}
	for i, c := range cases {
		ok := slices.EqualFunc(got[i], c.Want, func(g, w string) bool {
			return g == w || (w == "error:" && strings.HasPrefix(g, "error: "))
		})
		if !ok {
			t.Errorf("case %d (%s): got %q, want %q", i+1, deref(c.Value), got[i], c.Want)
		}
	}
	if result != nil && (gotResult == nil || *gotResult != *result) {
		t.Errorf("result %v, want %q", gotResult, *result)
	}
}

func deref(s *string) string {
	if s == nil {
		return "(no value)"
	}
	return *s
}

func repoRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
