package weir

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/weir-stream/weir/abi"
)

// in is one input record for a test batch.
type in struct {
	ts      int64
	key     []byte
	value   []byte
	headers [][2]string
}

// frame encodes a batch frame with the abi encoders.
func frame(recs ...in) []byte {
	b := abi.AppendBatchHeader(nil, len(recs))
	for _, r := range recs {
		b = abi.AppendRecord(b, r.ts, r.key, r.value, len(r.headers))
		for _, h := range r.headers {
			b = abi.AppendHeader(b, h[0], []byte(h[1]))
		}
	}
	return b
}

// values is a batch of records with these values and no key.
func values(vs ...string) []byte {
	recs := make([]in, len(vs))
	for i, v := range vs {
		recs[i] = in{value: []byte(v)}
	}
	return frame(recs...)
}

func quoteOpt(b []byte) string {
	if b == nil {
		return "<nil>"
	}
	return strconv.Quote(string(b))
}

// describe renders one output entry compactly, keeping absent distinct from
// empty: `keep 0`, `record 1 "v"`, `record 2 key="k" ts=5 headers=[a=b] "v"`,
// `error 3 "msg"`.
func describe(e *abi.Entry) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%v %d", e.Kind, e.Index)
	switch e.Kind {
	case abi.KindError:
		fmt.Fprintf(&sb, " %q", e.Message)
	case abi.KindRecord:
		if e.Flags&abi.FlagKey != 0 {
			sb.WriteString(" key=" + quoteOpt(e.Key))
		}
		if e.Flags&abi.FlagTimestamp != 0 {
			fmt.Fprintf(&sb, " ts=%d", e.Time)
		}
		if e.Flags&abi.FlagHeaders != 0 {
			var hs []string
			e.Headers.Each(func(n, v []byte) { hs = append(hs, string(n)+"="+string(v)) })
			fmt.Fprintf(&sb, " headers=%v", hs)
		}
		sb.WriteString(" " + quoteOpt(e.Value))
	}
	return sb.String()
}

// run runs op over batch with a fresh processor and returns the described
// entries, checking the frame against the ABI's ordering rules.
func run(t *testing.T, op abi.Op, batch []byte) []string {
	t.Helper()
	var p processor
	out, err := p.run(op, batch)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return decode(t, op, batch, out)
}

func decode(t *testing.T, op abi.Op, batch, out []byte) []string {
	t.Helper()
	var br abi.BatchReader
	n, err := br.Reset(batch)
	if err != nil {
		t.Fatal(err)
	}
	var r abi.OutputReader
	if _, err := r.Reset(out); err != nil {
		t.Fatalf("output frame: %v", err)
	}
	got := []string{}
	prev := -1
	for {
		var e abi.Entry
		more, err := r.Next(&e)
		if err != nil {
			t.Fatalf("output frame: %v", err)
		}
		if !more {
			break
		}
		if msg := abi.CheckOrder(op, n, prev, &e); msg != "" {
			t.Errorf("output frame breaks the ABI order rules: %s", msg)
		}
		prev = e.Index
		got = append(got, describe(&e))
	}
	if op == abi.OpMap && len(got) != n {
		t.Errorf("map produced %d entries for %d records", len(got), n)
	}
	return got
}

// setHandlers installs the given handlers for the duration of the test.
func setHandlers(t *testing.T, set func()) {
	t.Helper()
	saved := handlers
	handlers.init, handlers.mapFn, handlers.mapTo, handlers.flatMap, handlers.filter = nil, nil, nil, nil, nil
	set()
	t.Cleanup(func() { handlers = saved })
}

// fakeHost implements hostAPI over a Go map, scoping state by the record
// key of each batch index as the real host does.
type fakeHost struct {
	keys   [][]byte // record key of each batch index
	state  map[string][]byte
	logs   []string
	status int32 // when negative, every state call returns it
	gets   int   // state_get calls
	lie    bool  // state_get always reports one byte more than dst holds
}

func newFakeHost(t *testing.T, recordKeys ...string) *fakeHost {
	h := &fakeHost{state: map[string][]byte{}}
	for _, k := range recordKeys {
		h.keys = append(h.keys, []byte(k))
	}
	saved := host
	host = h
	t.Cleanup(func() { host = saved })
	return h
}

func (h *fakeHost) scoped(index uint32, key []byte) (string, int32) {
	if h.status < 0 {
		return "", h.status
	}
	if int(index) >= len(h.keys) {
		return "", abi.StatusBadIndex
	}
	return strconv.Quote(string(h.keys[index])) + string(key), abi.StatusOK
}

func (h *fakeHost) log(level int32, msg string) {
	h.logs = append(h.logs, LogLevel(level).String()+": "+msg)
}

func (h *fakeHost) stateGet(index uint32, key, dst []byte) int32 {
	h.gets++
	k, s := h.scoped(index, key)
	if s < 0 {
		return s
	}
	v, ok := h.state[k]
	if !ok {
		return abi.StatusNotFound
	}
	copy(dst, v)
	if h.lie {
		return int32(len(dst) + 1)
	}
	return int32(len(v))
}

func (h *fakeHost) statePut(index uint32, key, value []byte) int32 {
	k, s := h.scoped(index, key)
	if s < 0 {
		return s
	}
	h.state[k] = append([]byte{}, value...)
	return abi.StatusOK
}

func (h *fakeHost) stateDelete(index uint32, key []byte) int32 {
	k, s := h.scoped(index, key)
	if s < 0 {
		return s
	}
	delete(h.state, k)
	return abi.StatusOK
}
