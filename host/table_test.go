package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
	"github.com/weir-stream/weir/host"
	"github.com/weir-stream/weir/host/broker"
)

// produceTable writes records to topic on b, keyed; a nil value is a
// tombstone. Records go to partitions by key, as a table topic's do.
func produceTable(t *testing.T, b *broker.Broker, topic string, kvs ...[2]*string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for _, kv := range kvs {
		r := &kgo.Record{Key: []byte(*kv[0])}
		if kv[1] != nil {
			r.Value = []byte(*kv[1])
		}
		recs = append(recs, r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func kv(k string, v any) [2]*string {
	if v == nil {
		return [2]*string{&k, nil}
	}
	s := v.(string)
	return [2]*string{&k, &s}
}

// deadLetters reads a dead-letter file: each line's stage, reason and value.
func deadLetters(t *testing.T, path string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("dead letter %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// TestTableJoin runs orders from standard input through a table_join with
// a Kafka topic of customers on the embedded broker, and checks the output
// and the dead letters of each kind of join.
func TestTableJoin(t *testing.T) {
	b, err := broker.Start(broker.Options{Topics: "customers:3"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	produceTable(t, b, "customers",
		kv("c1", `{"name":"Ann","tier":"gold"}`),
		kv("c2", `{"name":"Bob"}`),
		kv("c3", `{"name":"Cy"}`),
		kv("42", `"the answer"`),
		kv("c1", `{"name":"Ann B.","tier":"gold"}`), // the latest value counts
		kv("c2", nil),                               // deleted
		kv("cx", `{"name":`),                        // not JSON: a dead letter, not in the table
	)
	const orders = `{"order":1,"customer":"c1","amount":10}
{"order":2,"customer":"c2"}
{"order":3,"customer":"c9"}
{"order":4,"customer":null}
{"order":5}
[1,2]
{"order":6,"customer":"c\u0033"}
{"order":7,"customer":42}
`
	ann := `{"name":"Ann B.","tier":"gold"}`
	for _, tt := range []struct {
		name string
		ops  string // the operators
		want []string
		dead []string // reasons, besides the table's bad record
	}{
		{
			name: "inner join on a field",
			ops:  `[{name: cust, type: table_join, topic: customers, field: customer, into: cust}]`,
			want: []string{
				`{"order":1,"customer":"c1","amount":10,"cust":` + ann + `}`,
				`{"order":6,"customer":"c\u0033","cust":{"name":"Cy"}}`,
				`{"order":7,"customer":42,"cust":"the answer"}`,
			},
			dead: []string{`table_join "cust": field customer not found`, `table_join "cust": value is not a JSON object`},
		},
		{
			name: "left join on a field",
			ops:  `[{name: cust, type: table_join, topic: customers, field: customer, into: cust, join: left}]`,
			want: []string{
				`{"order":1,"customer":"c1","amount":10,"cust":` + ann + `}`,
				`{"order":2,"customer":"c2","cust":null}`,
				`{"order":3,"customer":"c9","cust":null}`,
				`{"order":4,"customer":null,"cust":null}`,
				`{"order":6,"customer":"c\u0033","cust":{"name":"Cy"}}`,
				`{"order":7,"customer":42,"cust":"the answer"}`,
			},
			dead: []string{`table_join "cust": field customer not found`, `table_join "cust": value is not a JSON object`},
		},
		{
			name: "the value replaces the field where it stands",
			ops:  `[{name: cust, type: table_join, topic: customers, field: customer, into: customer}]`,
			want: []string{
				`{"order":1,"customer":` + ann + `,"amount":10}`,
				`{"order":6,"customer":{"name":"Cy"}}`,
				`{"order":7,"customer":"the answer"}`,
			},
			dead: []string{`table_join "cust": field customer not found`, `table_join "cust": value is not a JSON object`},
		},
		{
			name: "join on the record key",
			ops: `[{name: by-customer, type: key_by, field: customer},
  {name: cust, type: table_join, topic: customers, into: cust, join: left}]`,
			want: []string{
				`{"order":1,"customer":"c1","amount":10,"cust":` + ann + `}`,
				`{"order":2,"customer":"c2","cust":null}`,
				`{"order":3,"customer":"c9","cust":null}`,
				`{"order":4,"customer":null,"cust":null}`, // key_by makes the key "null": no such customer
				`{"order":6,"customer":"c\u0033","cust":{"name":"Cy"}}`,
				`{"order":7,"customer":42,"cust":"the answer"}`,
			},
			dead: []string{"key_by customer: field not found", "key_by customer: field not found"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			dlq := filepath.Join(dir, "dead.jsonl")
			path := writePipeline(t, fmt.Sprintf(`name: orders
sources: [{name: in, type: stdin}]
operators: %s
sinks: [{name: out, type: stdout}]
dead_letter: {type: file, path: %s}
`, tt.ops, dlq))
			var out strings.Builder
			ctx := context.Background()
			p, err := host.Load(ctx, path, host.Options{Stdin: strings.NewReader(orders), Stdout: &out, Broker: b})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close(ctx)
			if _, err := p.Run(ctx); err != nil {
				t.Fatal(err)
			}
			if got := strings.Split(strings.TrimSpace(out.String()), "\n"); strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("output:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			var reasons []string
			tableBad := 0
			for _, d := range deadLetters(t, dlq) {
				r := d["reason"].(string)
				if strings.Contains(r, `table topic "customers"`) {
					tableBad++
					if d["key"] != "cx" || d["value"] != `{"name":` || d["topic"] != "customers" ||
						!strings.Contains(r, "the value is not JSON") {
						t.Errorf("the table's bad record: %v", d)
					}
					continue
				}
				reasons = append(reasons, r)
			}
			if strings.Join(reasons, "\n") != strings.Join(tt.dead, "\n") || tableBad != 1 {
				t.Errorf("dead letters %q and %d of the table, want %q and 1", reasons, tableBad, tt.dead)
			}
		})
	}
}

// TestTableJoinFollowsUpdates: records processed after the table's topic
// changes see the change, while the pipeline runs.
func TestTableJoinFollowsUpdates(t *testing.T) {
	b, err := broker.Start(broker.Options{Topics: "prices:2"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	produceTable(t, b, "prices", kv("apple", `1.5`))
	path := writePipeline(t, `name: priced
sources: [{name: in, type: stdin}]
operators: [{name: price, type: table_join, topic: prices, field: item, into: price, join: left}]
sinks: [{name: out, type: stdout}]
`)
	pr, pw := io.Pipe()
	out := &weirtest.SyncBuffer{}
	ctx := context.Background()
	p, err := host.Load(ctx, path, host.Options{Stdin: pr, Stdout: out, Broker: b})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := p.Run(ctx)
		done <- err
	}()
	t.Cleanup(func() { p.Close(ctx) })
	send := func(line string) {
		if _, err := io.WriteString(pw, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"item":"apple"}`)
	send(`{"item":"pear"}`)
	weirtest.PollUntil(t, 20*time.Second, "two priced records", func() bool { return len(out.Lines()) == 2 })
	produceTable(t, b, "prices", kv("pear", `0.8`), kv("apple", nil))
	// The table follows the topic in the background: send until a record
	// sees the new prices.
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(strings.Join(out.Lines(), "\n"), `{"item":"pear","price":0.8}`) {
		if time.Now().After(deadline) {
			t.Fatalf("the new price never reached the join:\n%s", strings.Join(out.Lines(), "\n"))
		}
		send(`{"item":"pear"}`)
		time.Sleep(20 * time.Millisecond)
	}
	send(`{"item":"apple"}`)
	pw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	lines := out.Lines()
	if lines[0] != `{"item":"apple","price":1.5}` || lines[1] != `{"item":"pear","price":null}` ||
		lines[len(lines)-1] != `{"item":"apple","price":null}` {
		t.Fatalf("output:\n%s", strings.Join(lines, "\n"))
	}
}
