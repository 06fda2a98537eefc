package host_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weir-stream/weir/host"
)

// TestShadowThatHangsIsStopped runs a shadow candidate that loops on every
// record: it gets one deadline for the whole batch, is stopped when it
// runs past it, and the live version's output is whole.
func TestShadowThatHangsIsStopped(t *testing.T) {
	dir := t.TempDir()
	var lines []string
	for i := range 20 {
		lines = append(lines, fmt.Sprintf("@%d", i)) // the hostile module loops on '@'
	}
	input := filepath.Join(dir, "in.txt")
	if err := os.WriteFile(input, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := writePipeline(t, `name: shadowed
sources: [{name: in, type: file, path: `+input+`, format: lines}]
operators:
  - name: live
    type: map
    plugin: {{root}}/host/internal/wasm/testdata/identity.wasm
    shadow: {{root}}/host/internal/wasm/testdata/hostile.wasm
    timeout: 300ms
sinks: [{name: out, type: stdout, format: raw}]
`)
	var out bytes.Buffer
	ctx := context.Background()
	p, err := host.Load(ctx, path, host.Options{Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	if _, err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if got := strings.Split(strings.TrimSpace(out.String()), "\n"); strings.Join(got, ",") != strings.Join(lines, ",") {
		t.Fatalf("live output %q", got)
	}
	st := p.Plugins()[0]
	if st.Shadow != nil || !strings.Contains(st.LastError, "a batch ran past 300ms") {
		t.Fatalf("status %+v: want the shadow stopped, with the reason", st)
	}
}
