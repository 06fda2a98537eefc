package weir

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/weir-stream/weir/abi"
)

// TestAppendStateKeyIsABI checks that the SDK's state keys are package
// abi's slot convention (whose own tests pin the bytes).
func TestAppendStateKeyIsABI(t *testing.T) {
	for _, tc := range []struct {
		kind   StateKind
		name   string
		suffix []byte
	}{
		{ValueStateKind, "count", nil},
		{MapStateKind, "LUT", []byte("temp")},
		{ListStateKind, "events", abi.AppendStateListIndex(nil, 2)},
	} {
		got := AppendStateKey([]byte("pre"), tc.kind, tc.name, tc.suffix)
		if want := abi.AppendStateKey([]byte("pre"), tc.kind, tc.name, tc.suffix); !bytes.Equal(got, want) {
			t.Errorf("AppendStateKey(%q, %q) = %q, want abi's %q", tc.kind, tc.name, got, want)
		}
	}
}

// stateBatch runs a map over records with the given record keys, calling fn
// for each, and returns the entries.
func stateBatch(t *testing.T, fn MapFunc, keys ...string) []string {
	t.Helper()
	recs := make([]in, len(keys))
	for i, k := range keys {
		recs[i] = in{key: []byte(k), value: []byte(k)}
	}
	setHandlers(t, func() { Map(fn) })
	return run(t, abi.OpMap, frame(recs...))
}

func TestValueState(t *testing.T) {
	h := newFakeHost(t, "a", "b", "a", "a")
	count := NewValueState("count")
	var seen []int64
	got := stateBatch(t, func(r *Record) ([]byte, error) {
		n, ok, err := count.GetInt64(r)
		if err != nil {
			return nil, err
		}
		if !ok != (n == 0) {
			t.Errorf("found %v with %d", ok, n)
		}
		seen = append(seen, n)
		return r.Value, count.PutInt64(r, n+1)
	}, "a", "b", "a", "a")
	if want := []int64{0, 0, 1, 2}; !equalInts(seen, want) {
		t.Errorf("counts seen %v, want %v", seen, want)
	}
	if len(got) != 4 || got[0] != "keep 0" {
		t.Errorf("entries %q", got)
	}
	if v := h.state[`"a"vcount`]; !bytes.Equal(v, []byte{3, 0, 0, 0, 0, 0, 0, 0}) {
		t.Errorf("stored %v for key a, want int64 3 little-endian", v)
	}
	if count.Name() != "count" {
		t.Errorf("Name() = %q", count.Name())
	}

	// Bytes, floats and delete.
	stateBatch(t, func(r *Record) ([]byte, error) {
		raw := NewValueState("raw")
		if err := raw.Put(r, []byte("hello")); err != nil {
			return nil, err
		}
		v, ok, err := raw.Get(r)
		if string(v) != "hello" || !ok || err != nil {
			t.Errorf("Get = %q, %v, %v", v, ok, err)
		}
		if err := raw.Delete(r); err != nil {
			return nil, err
		}
		if v, ok, err := raw.Get(r); v != nil || ok || err != nil {
			t.Errorf("Get after Delete = %q, %v, %v", v, ok, err)
		}
		f := NewValueState("f")
		if err := f.PutFloat64(r, -10.700000000000003); err != nil {
			return nil, err
		}
		if x, ok, err := f.GetFloat64(r); x != -10.700000000000003 || !ok || err != nil {
			t.Errorf("GetFloat64 = %v, %v, %v", x, ok, err)
		}
		return r.Value, nil
	}, "a")
	if v := h.state[`"a"vf`]; !bytes.Equal(v, le64(math.Float64bits(-10.700000000000003))) {
		t.Errorf("float stored as %v", v)
	}
}

func le64(u uint64) []byte {
	b := make([]byte, 8)
	for i := range b {
		b[i] = byte(u >> (8 * i))
	}
	return b
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestMapState(t *testing.T) {
	h := newFakeHost(t, "123", "456", "123")
	lut := NewMapState("LUT")
	readings := []float64{90.5, 91.2, 101.2}
	var prevs []float64
	stateBatch(t, func(r *Record) ([]byte, error) {
		i := r.index
		prev, ok, err := lut.GetFloat64(r, []byte("temp"))
		if err != nil {
			return nil, err
		}
		if !ok {
			prev = math.NaN()
		}
		prevs = append(prevs, prev)
		if err := lut.PutFloat64(r, []byte("temp"), readings[i]); err != nil {
			return nil, err
		}
		return r.Value, lut.PutInt64(r, []byte("n"), int64(i))
	}, "123", "456", "123")
	if len(prevs) != 3 || !math.IsNaN(prevs[0]) || !math.IsNaN(prevs[1]) || prevs[2] != 90.5 {
		t.Errorf("previous values %v, want [NaN NaN 90.5]", prevs)
	}
	if _, ok := h.state["\"123\"m\x03LUTtemp"]; !ok {
		t.Errorf("state keys %q lack the documented encoding", keys(h.state))
	}
	stateBatch(t, func(r *Record) ([]byte, error) {
		if n, ok, err := lut.GetInt64(r, []byte("n")); n != 2 || !ok || err != nil {
			t.Errorf("GetInt64 = %v, %v, %v", n, ok, err)
		}
		if err := lut.Put(r, []byte{}, []byte("empty key")); err != nil {
			return nil, err
		}
		if v, ok, err := lut.Get(r, nil); string(v) != "empty key" || !ok || err != nil {
			t.Errorf("Get = %q, %v, %v", v, ok, err)
		}
		if err := lut.Delete(r, []byte("temp")); err != nil {
			return nil, err
		}
		if _, ok, _ := lut.GetFloat64(r, []byte("temp")); ok {
			t.Error("entry survived Delete")
		}
		return r.Value, nil
	}, "123")
	if lut.Name() != "LUT" {
		t.Errorf("Name() = %q", lut.Name())
	}
}

func TestListState(t *testing.T) {
	h := newFakeHost(t, "a", "a", "b", "a")
	events := NewListState("events")
	var seen []string
	stateBatch(t, func(r *Record) ([]byte, error) {
		if err := events.Add(r, r.Value); err != nil {
			return nil, err
		}
		var all []string
		if err := events.Range(r, func(_ int, v []byte) error {
			all = append(all, string(v))
			return nil
		}); err != nil {
			return nil, err
		}
		seen = append(seen, strings.Join(all, "+"))
		return r.Value, nil
	}, "a", "a", "b", "a")
	if got := strings.Join(seen, " "); got != "a a+a b a+a+a" {
		t.Errorf("lists seen %q", got)
	}
	if _, ok := h.state["\"a\"l\x06events\x00\x00\x00\x00\x00\x00\x00\x02"]; !ok {
		t.Errorf("state keys %q lack the documented encoding", keys(h.state))
	}
	stateBatch(t, func(r *Record) ([]byte, error) {
		if n, err := events.Len(r); n != 3 || err != nil {
			t.Errorf("Len = %d, %v", n, err)
		}
		if v, ok, err := events.Get(r, 1); string(v) != "a" || !ok || err != nil {
			t.Errorf("Get(1) = %q, %v, %v", v, ok, err)
		}
		if _, ok, _ := events.Get(r, 3); ok {
			t.Error("Get past the end found an element")
		}
		if err := events.Clear(r); err != nil {
			return nil, err
		}
		if n, _ := events.Len(r); n != 0 {
			t.Errorf("Len after Clear = %d", n)
		}
		return r.Value, nil
	}, "a")
	for k := range h.state {
		if strings.HasPrefix(k, "\"a\"l") {
			t.Errorf("entry %q survived Clear", k)
		}
	}
	if events.Name() != "events" {
		t.Errorf("Name() = %q", events.Name())
	}
}

func keys(m map[string][]byte) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

func TestStateGetGrows(t *testing.T) {
	h := newFakeHost(t, "k")
	big := NewValueState("big")
	for _, size := range []int{0, 255, 256, 257, 100 << 10} {
		want := bytes.Repeat([]byte{'x'}, size)
		gets := h.gets
		stateBatch(t, func(r *Record) ([]byte, error) {
			if err := big.Put(r, want); err != nil {
				return nil, err
			}
			got, ok, err := big.Get(r)
			if !ok || err != nil || !bytes.Equal(got, want) {
				t.Errorf("size %d: Get = %d bytes, %v, %v", size, len(got), ok, err)
			}
			return r.Value, nil
		}, "k")
		if size > 256 && size > cap(stateBuf.val)/2 && h.gets-gets != 2 {
			t.Errorf("size %d: %d state_get calls, want 2 (grow and retry)", size, h.gets-gets)
		}
	}
	// A host that keeps reporting more than it has is an error, not a loop.
	h.lie = true
	got := stateBatch(t, func(r *Record) ([]byte, error) {
		_, _, err := big.Get(r)
		return r.Value, err
	}, "k")
	if len(got) != 1 || !strings.Contains(got[0], "state_get") {
		t.Errorf("entries %q, want a state_get error", got)
	}
}

func TestStateErrors(t *testing.T) {
	tests := []struct {
		name   string
		status int32
		text   string
	}{
		{"no context", abi.StatusNoContext, abi.StatusText(abi.StatusNoContext)},
		{"bad index", abi.StatusBadIndex, abi.StatusText(abi.StatusBadIndex)},
		{"too large", abi.StatusTooLarge, abi.StatusText(abi.StatusTooLarge)},
		{"bad memory", abi.StatusBadMemory, abi.StatusText(abi.StatusBadMemory)},
		{"unknown", -99, "unknown status -99"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newFakeHost(t, "k")
			h.status = tc.status
			vs, ms := NewValueState("v"), NewMapState("m")
			r := &Record{}
			calls := []struct {
				call string
				err  error
			}{
				{abi.ImportStateGet, second(vs.Get(r))},
				{abi.ImportStatePut, vs.Put(r, nil)},
				{abi.ImportStateDelete, vs.Delete(r)},
				{abi.ImportStateGet, second(ms.Get(r, nil))},
				{abi.ImportStatePut, ms.Put(r, nil, nil)},
				{abi.ImportStateDelete, ms.Delete(r, nil)},
			}
			for _, c := range calls {
				var se *StateError
				if !errors.As(c.err, &se) || se.Status != tc.status || se.Call != c.call {
					t.Fatalf("error %v, want a StateError for %s with status %d", c.err, c.call, tc.status)
				}
				if !strings.Contains(c.err.Error(), tc.text) || !strings.HasPrefix(c.err.Error(), "weir: "+c.call) {
					t.Errorf("message %q lacks %q", c.err, tc.text)
				}
			}
		})
	}
}

func second[A, B any](_ A, b B, err error) error { return err }

func TestTypedSizeError(t *testing.T) {
	newFakeHost(t, "k")
	vs := NewValueState("v")
	stateBatch(t, func(r *Record) ([]byte, error) {
		if err := vs.Put(r, []byte("short")); err != nil {
			return nil, err
		}
		_, ok, err := vs.GetFloat64(r)
		var se *SizeError
		if ok || !errors.As(err, &se) || se.Len != 5 || se.Type != "float64" {
			t.Errorf("GetFloat64 = %v, %v", ok, err)
		}
		if err != nil && err.Error() != `weir: state "v" holds 5 bytes, not an 8-byte float64` {
			t.Errorf("message %q", err)
		}
		return r.Value, nil
	}, "k")
}

func TestNativeHostHasNoState(t *testing.T) {
	// Outside wasm there is no host: state calls fail as they do in Init.
	if _, _, err := NewValueState("v").Get(&Record{}); err == nil {
		t.Skip("a host is installed")
	} else {
		var se *StateError
		if !errors.As(err, &se) || se.Status != abi.StatusNoContext {
			t.Errorf("error %v, want StatusNoContext", err)
		}
	}
}
