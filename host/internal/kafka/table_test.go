package kafka

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
)

// tblGet reads key from t through a view.
func tblGet(t *Table, key string) (string, bool) {
	v := t.View()
	defer v.Release()
	val, ok := v.Get([]byte(key))
	return string(val), ok
}

// TestTable loads a three-partition topic with updates, tombstones, bad
// records and transactions (one committed, one aborted) into a table,
// then follows what is produced after it opened. Records go to partitions
// by key, as a table topic's must.
func TestTable(t *testing.T) {
	_, cc := srcBroker(t, map[string]int32{"customers": 3})
	rec := func(k, v string) *kgo.Record {
		r := &kgo.Record{Topic: "customers", Value: []byte(v)}
		if k != "" {
			r.Key = []byte(k)
		}
		if v == "<nil>" {
			r.Value = nil
		}
		return r
	}
	notJSON, noKey := rec("c3", `{"name":`), rec("", `{"name":"nobody"}`)
	srcProduce(t, cc,
		rec("c1", `{"name":"Ann"}`),
		rec("c2", `{"name":"Bob"}`),
		rec("c3", ` {"name":"Cy"} `),
		rec("c1", `{"name":"Ann B."}`), // a later value wins
		rec("c2", "<nil>"),             // a tombstone deletes
		notJSON,                        // c3 keeps its value
		noKey,
		rec("c4", `"just a string"`),
	)
	// A committed and an aborted transaction, the aborted one last on its
	// partition, so that the load must see past its marker to finish.
	txOpts := append(mustOpts(t, cc), kgo.TransactionalID("table-test"), kgo.DefaultProduceTopic("customers"))
	tx, err := kgo.NewClient(txOpts...)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	ctx := context.Background()
	for _, commit := range []bool{true, false} {
		if err := tx.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		v := `{"name":"committed"}`
		if !commit {
			v = `{"name":"aborted"}`
		}
		if err := tx.ProduceSync(ctx, rec("c5", v)).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := tx.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}

	tbl, err := OpenTable(ctx, TableConfig{Client: cc, Topic: "customers", Logger: srcQuiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Close()
	for _, tt := range []struct {
		key, want string
		ok        bool
	}{
		{"c1", `{"name":"Ann B."}`, true},
		{"c2", "", false},
		{"c3", `{"name":"Cy"}`, true}, // white space around the value is dropped
		{"c4", `"just a string"`, true},
		{"c5", `{"name":"committed"}`, true},
		{"c9", "", false},
	} {
		if got, ok := tblGet(tbl, tt.key); got != tt.want || ok != tt.ok {
			t.Errorf("after loading, %s = %q, %v; want %q, %v", tt.key, got, ok, tt.want, tt.ok)
		}
	}
	if n := tbl.Len(); n != 4 {
		t.Errorf("Len = %d, want 4", n)
	}
	bad := tbl.TakeBad(nil)
	slices.SortFunc(bad, func(a, b TableRecord) int { return strings.Compare(a.Reason, b.Reason) })
	if len(bad) != 2 ||
		bad[0].Partition != noKey.Partition || bad[0].Offset != noKey.Offset || bad[0].Reason != "the record has no key" ||
		string(bad[0].Value) != `{"name":"nobody"}` ||
		bad[1].Partition != notJSON.Partition || bad[1].Offset != notJSON.Offset || string(bad[1].Key) != "c3" ||
		!strings.HasPrefix(bad[1].Reason, "the value is not JSON: ") {
		t.Fatalf("bad records = %+v", bad)
	}
	if again := tbl.TakeBad(nil); len(again) != 0 {
		t.Fatalf("bad records taken twice: %+v", again)
	}

	// Updates after the load are followed.
	srcProduce(t, cc, rec("c2", `{"name":"Bob again"}`), rec("c1", "<nil>"), rec("c6", `{}`))
	weirtest.PollUntil(t, 10*time.Second, "the table to follow the topic", func() bool {
		_, ok1 := tblGet(tbl, "c1")
		v2, _ := tblGet(tbl, "c2")
		_, ok6 := tblGet(tbl, "c6")
		return !ok1 && v2 == `{"name":"Bob again"}` && ok6
	})
}

// TestTableEmptyAndMissingTopics: an empty topic loads as an empty table at
// once; a missing one is ErrNoTopic.
func TestTableEmptyAndMissingTopics(t *testing.T) {
	_, cc := srcBroker(t, map[string]int32{"empty": 2})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tbl, err := OpenTable(ctx, TableConfig{Client: cc, Topic: "empty", Logger: srcQuiet()})
	if err != nil {
		t.Fatal(err)
	}
	if n := tbl.Len(); n != 0 {
		t.Errorf("Len = %d", n)
	}
	tbl.Close()
	if _, err := OpenTable(ctx, TableConfig{Client: cc, Topic: "nope", Logger: srcQuiet()}); !errors.Is(err, ErrNoTopic) {
		t.Fatalf("missing topic: %v, want ErrNoTopic", err)
	}
}

func mustOpts(tb testing.TB, cc ClientConfig) []kgo.Opt {
	tb.Helper()
	o, err := cc.Opts()
	if err != nil {
		tb.Fatal(err)
	}
	return o
}
