package orderswithcustomers_test

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
)

// TestOrdersWithCustomers runs the README's command through the weir
// binary and checks every order against a join computed here from the two
// input files: each order once, its fields as they were, and customer set
// to the last record of its customer id in customers.jsonl, or null.
func TestOrdersWithCustomers(t *testing.T) {
	res := weirtest.Run(t, ".", "", "run", "--sequential", "customers.yaml", "orders.yaml", "pipeline.yaml")
	if res.Code != 0 {
		t.Fatalf("exit %d\n%s", res.Code, res.Stderr)
	}
	customers := map[string]json.RawMessage{}
	for _, line := range readLines(t, "customers.jsonl") {
		var c struct{ ID string }
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatal(err)
		}
		customers[c.ID] = json.RawMessage(line)
	}
	want := map[string]map[string]any{}
	for _, line := range readLines(t, "orders.jsonl") {
		o := decode(t, line)
		o["customer"] = nil
		if cust, ok := customers[o["customer_id"].(string)]; ok {
			o["customer"] = decode(t, string(cust))
		}
		want[line] = o
	}
	got := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	if len(got) != len(want) {
		t.Fatalf("%d orders out, want %d:\n%s\n%s", len(got), len(want), res.Stdout, res.Stderr)
	}
	seen := map[string]bool{}
	for _, line := range got {
		// The order's own fields come first, as they were, then customer.
		i := strings.LastIndex(line, `,"customer":`)
		if i < 0 || !strings.HasSuffix(line, "}") {
			t.Fatalf("no customer field at the end: %s", line)
		}
		in := line[:i] + "}"
		w, ok := want[in]
		if !ok || seen[in] {
			t.Fatalf("output %s: not an order of orders.jsonl, or twice", line)
		}
		seen[in] = true
		if g := decode(t, line); !reflect.DeepEqual(g, w) {
			t.Errorf("got  %s\nwant %v", line, w)
		}
	}
	if !strings.Contains(res.Stderr, `table loaded`) || !strings.Contains(res.Stderr, "dead_letters=0") {
		t.Errorf("log does not show the table loaded and a clean run:\n%s", res.Stderr)
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return m
}
