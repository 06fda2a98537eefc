package kafka

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// conEnvelope is Consume's Meta line.
type conEnvelope struct {
	Partition int32
	Offset    int64
	Timestamp int64
	Key       *string
	Value     json.RawMessage
}

func conParse(tb testing.TB, out string) []conEnvelope {
	tb.Helper()
	var envs []conEnvelope
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var e conEnvelope
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			tb.Fatalf("envelope %q: %v", line, err)
		}
		envs = append(envs, e)
	}
	return envs
}

func TestConsoleProduceConsume(t *testing.T) {
	t.Parallel()
	_, cc := srcBroker(t, map[string]int32{"c": 3})
	ctx := context.Background()

	var in strings.Builder
	want := map[int]string{} // n → key ("" for none)
	for i := range 60 {
		switch {
		case i == 10:
			fmt.Fprintf(&in, "{\"user\":{\"id\":42},\"n\":%d}\n", i) // a number key
			want[i] = "42"
		case i == 11:
			fmt.Fprintf(&in, "{\"user\":{},\"n\":%d}\n", i) // no key
			want[i] = ""
		case i == 12:
			fmt.Fprintf(&in, "  {\"user\":{\"id\":\"caf\\u00e9\"},\"n\":%d}  \r\n\n", i) // escaped string key, spaces, blank line
			want[i] = "café"
		default:
			fmt.Fprintf(&in, "{\"user\":{\"id\":\"u%d\"},\"n\":%d}\n", i%7, i)
			want[i] = "u" + strconv.Itoa(i%7)
		}
	}
	n, err := Produce(ctx, ProduceConfig{Client: cc, Topic: "c", KeyField: []string{"user", "id"}, Logger: srcQuiet()}, strings.NewReader(in.String()), "input")
	if err != nil || n != 60 {
		t.Fatalf("Produce = %d, %v; want 60", n, err)
	}

	t.Run("meta", func(t *testing.T) {
		var out bytes.Buffer
		got, err := Consume(ctx, ConsumeConfig{Client: cc, Topic: "c", FromBeginning: true, Max: 60, Meta: true, Logger: srcQuiet()}, &out)
		if err != nil || got != 60 {
			t.Fatalf("Consume = %d, %v; want 60", got, err)
		}
		seen := map[int]bool{}
		partitions := map[int32]bool{}
		for _, e := range conParse(t, out.String()) {
			partitions[e.Partition] = true
			var v struct{ N int }
			if err := json.Unmarshal(e.Value, &v); err != nil {
				t.Fatalf("value %s: %v", e.Value, err)
			}
			seen[v.N] = true
			key := want[v.N]
			if key == "" {
				if e.Key != nil {
					t.Errorf("record %d: key %q, want null", v.N, *e.Key)
				}
				continue
			}
			if e.Key == nil || *e.Key != key {
				t.Errorf("record %d: key %v, want %q", v.N, e.Key, key)
				continue
			}
			if p := snkJavaPartition([]byte(key), 3); e.Partition != p {
				t.Errorf("record %d with key %q is in partition %d; the Java client puts it in %d", v.N, key, e.Partition, p)
			}
			if e.Timestamp < time.Now().Add(-time.Hour).UnixMilli() || e.Offset < 0 {
				t.Errorf("record %d: timestamp %d offset %d", v.N, e.Timestamp, e.Offset)
			}
		}
		if len(seen) != 60 {
			t.Errorf("consumed %d distinct records, want 60", len(seen))
		}
		if len(partitions) != 3 {
			t.Errorf("records landed in partitions %v, want all three", partitions)
		}
	})

	t.Run("max", func(t *testing.T) {
		var out bytes.Buffer
		got, err := Consume(ctx, ConsumeConfig{Client: cc, Topic: "c", FromBeginning: true, Max: 5, Logger: srcQuiet()}, &out)
		if err != nil || got != 5 || strings.Count(out.String(), "\n") != 5 {
			t.Fatalf("Consume = %d, %v, output %q; want 5 lines", got, err, out.String())
		}
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			if !json.Valid([]byte(line)) || !strings.Contains(line, `"n":`) {
				t.Errorf("line %q is not a produced value", line)
			}
		}
	})

	t.Run("timeout", func(t *testing.T) {
		var out bytes.Buffer
		start := time.Now()
		// The timeout is how long Consume waits for a record: long enough
		// that a loaded machine still fetches all 60 within it.
		got, err := Consume(ctx, ConsumeConfig{Client: cc, Topic: "c", FromBeginning: true, Timeout: 2 * time.Second, Logger: srcQuiet()}, &out)
		if err != nil || got != 60 {
			t.Fatalf("Consume = %d, %v; want 60", got, err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("Consume took %v to time out", d)
		}
	})

	t.Run("latest", func(t *testing.T) {
		var out bytes.Buffer
		got, err := Consume(ctx, ConsumeConfig{Client: cc, Topic: "c", Timeout: 500 * time.Millisecond, Logger: srcQuiet()}, &out)
		if err != nil || got != 0 || out.Len() != 0 {
			t.Fatalf("Consume from the end = %d, %v, %q; want nothing", got, err, out.String())
		}
	})

	t.Run("context", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(300*time.Millisecond, cancel)
		got, err := Consume(cctx, ConsumeConfig{Client: cc, Topic: "c", Logger: srcQuiet()}, &bytes.Buffer{})
		if err != nil || got != 0 {
			t.Fatalf("Consume until cancelled = %d, %v; want 0, nil", got, err)
		}
	})

	t.Run("group", func(t *testing.T) {
		cfg := ConsumeConfig{Client: cc, Topic: "c", FromBeginning: true, Group: "cg", Max: 7, Logger: srcQuiet()}
		var first, rest bytes.Buffer
		if got, err := Consume(ctx, cfg, &first); err != nil || got != 7 {
			t.Fatalf("first Consume = %d, %v; want 7", got, err)
		}
		committed, _ := srcOffsets(t, cc, "cg", "c")
		var sum int64
		for _, o := range committed {
			sum += o
		}
		if sum != 7 {
			t.Errorf("committed %v after 7 records", committed)
		}
		cfg.Max, cfg.Timeout = 53, 10*time.Second // Max ends it; the timeout only bounds a failure
		if got, err := Consume(ctx, cfg, &rest); err != nil || got != 53 {
			t.Fatalf("second Consume = %d, %v; want the other 53", got, err)
		}
		lines := strings.Split(strings.TrimSpace(first.String()+rest.String()), "\n")
		slices.Sort(lines)
		if len(slices.Compact(lines)) != 60 {
			t.Errorf("the two runs printed %d distinct records, want 60", len(lines))
		}
	})
}

func TestConsoleConsumeFormats(t *testing.T) {
	t.Parallel()
	_, cc := srcBroker(t, map[string]int32{"f": 1})
	srcProduce(t, cc,
		&kgo.Record{Topic: "f", Value: []byte("plain text")},
		&kgo.Record{Topic: "f", Key: []byte("k"), Value: nil},
		&kgo.Record{Topic: "f", Key: []byte{}, Value: []byte("{\n  \"a\": [1,\n 2]\n}\n")},
		&kgo.Record{Topic: "f", Key: []byte("q\"\n"), Value: []byte(`"str"`), Timestamp: time.UnixMilli(1234)},
		&kgo.Record{Topic: "f", Value: []byte("\xff")},
	)
	tests := []struct {
		name string
		meta bool
		want string
	}{
		{
			name: "values",
			want: "plain text\n\n{\"a\":[1,2]}\n\"str\"\n\xff\n",
		},
		{
			name: "meta",
			meta: true,
			want: `{"partition":0,"offset":0,"timestamp":T,"key":null,"value":"plain text"}` + "\n" +
				`{"partition":0,"offset":1,"timestamp":T,"key":"k","value":null}` + "\n" +
				`{"partition":0,"offset":2,"timestamp":T,"key":"","value":{"a":[1,2]}}` + "\n" +
				`{"partition":0,"offset":3,"timestamp":1234,"key":"q\"\n","value":"str"}` + "\n" +
				`{"partition":0,"offset":4,"timestamp":T,"key":null,"value":"\ufffd"}` + "\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			n, err := Consume(context.Background(), ConsumeConfig{Client: cc, Topic: "f", FromBeginning: true, Max: 5, Meta: tc.meta, Logger: srcQuiet()}, &out)
			if err != nil || n != 5 {
				t.Fatalf("Consume = %d, %v", n, err)
			}
			got := out.String()
			if tc.meta { // hide the produce times
				var b strings.Builder
				for _, line := range strings.SplitAfter(got, "\n") {
					if i := strings.Index(line, `"timestamp":`); i >= 0 && !strings.Contains(line, `"timestamp":1234,`) {
						j := i + len(`"timestamp":`)
						k := j + strings.IndexByte(line[j:], ',')
						line = line[:j] + "T" + line[k:]
					}
					b.WriteString(line)
				}
				got = b.String()
				for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
					if !json.Valid([]byte(line)) {
						t.Errorf("envelope %q is not JSON", line)
					}
				}
			}
			if got != tc.want {
				t.Errorf("output:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

func TestConsoleProduceErrors(t *testing.T) {
	t.Parallel()
	_, cc := srcBroker(t, map[string]int32{"p": 2})
	tests := []struct {
		name    string
		cfg     ProduceConfig
		input   string
		wantN   int64
		wantErr string
	}{
		{
			name:    "bad line",
			cfg:     ProduceConfig{Topic: "p"},
			input:   "{\"a\":1}\n\n{\"a\":2}\n{nope}\n{\"a\":3}\n",
			wantN:   2,
			wantErr: "produce: in.json:4: not JSON: invalid character 'n' looking for beginning of object key string",
		},
		{
			name:    "bad line with a key field",
			cfg:     ProduceConfig{Topic: "p", KeyField: []string{"a"}},
			input:   "{\"a\":1}\n[1,\n",
			wantN:   1,
			wantErr: "in.json:2: not JSON: unexpected end of JSON input",
		},
		{
			name:    "bad topic name",
			cfg:     ProduceConfig{Topic: "a b"},
			input:   "{}\n",
			wantErr: "produce: topic name \"a b\"",
		},
		{
			name:  "empty input",
			cfg:   ProduceConfig{Topic: "p"},
			input: "\n  \n",
		},
		{
			name:  "last line without a newline",
			cfg:   ProduceConfig{Topic: "p"},
			input: "1\n2",
			wantN: 2,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Client, tc.cfg.Logger = cc, srcQuiet()
			n, err := Produce(context.Background(), tc.cfg, strings.NewReader(tc.input), "in.json")
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("error %v, want %q", err, tc.wantErr)
			}
			if n != tc.wantN {
				t.Errorf("produced %d, want %d", n, tc.wantN)
			}
		})
	}

	t.Run("missing topic", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		n, err := Produce(ctx, ProduceConfig{Client: cc, Topic: "missing", Logger: srcQuiet()}, strings.NewReader("{}\n"), "in")
		want := `topic "missing" does not exist on brokers ` + strings.Join(cc.Brokers, ",") + "; create it, or enable auto-creation"
		if n != 0 || err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Produce to a missing topic = %d, %v; want %q", n, err, want)
		}
	})
}

// TestConsoleConsumeSlowJoin checks that the time a group takes to join does
// not count against Timeout: the join takes 4 s, more than twice the
// Timeout, which leaves the fetch after it time on a loaded machine (the
// race pass once took more than 300 ms for it).
func TestConsoleConsumeSlowJoin(t *testing.T) {
	t.Parallel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "j"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cc := ClientConfig{Brokers: c.ListenAddrs()}
	srcProduce(t, cc, srcJSONRecords("j", 0, 3)...)
	c.ControlKey(kmsg.JoinGroup.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.DropControl()
		time.Sleep(4 * time.Second)
		return nil, nil, false
	})
	n, err := Consume(context.Background(), ConsumeConfig{Client: cc, Topic: "j", FromBeginning: true, Group: "slow", Timeout: 1500 * time.Millisecond, Logger: srcQuiet()}, &bytes.Buffer{})
	if err != nil || n != 3 {
		t.Fatalf("Consume = %d, %v; want 3", n, err)
	}
}
