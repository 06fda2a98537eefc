package weir

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/weir-stream/weir/abi"
)

func TestMap(t *testing.T) {
	tests := []struct {
		name  string
		fn    MapFunc
		batch []byte
		want  []string
	}{
		{
			name:  "returning the input value keeps it",
			fn:    func(r *Record) ([]byte, error) { return r.Value, nil },
			batch: values("a", "", "c"),
			want:  []string{"keep 0", "keep 1", "keep 2"},
		},
		{
			name:  "absent value returned as is is kept",
			fn:    func(r *Record) ([]byte, error) { return r.Value, nil },
			batch: frame(in{value: nil}),
			want:  []string{"keep 0"},
		},
		{
			name:  "an equal copy is a new record",
			fn:    func(r *Record) ([]byte, error) { return bytes.Clone(r.Value), nil },
			batch: values("a"),
			want:  []string{`record 0 "a"`},
		},
		{
			name:  "a prefix of the input is a new record",
			fn:    func(r *Record) ([]byte, error) { return r.Value[:1], nil },
			batch: values("ab"),
			want:  []string{`record 0 "a"`},
		},
		{
			name:  "new values",
			fn:    func(r *Record) ([]byte, error) { return bytes.ToUpper(r.Value), nil },
			batch: values("a", "bc"),
			want:  []string{`record 0 "A"`, `record 1 "BC"`},
		},
		{
			name: "nil is an absent value, empty is empty",
			fn: func(r *Record) ([]byte, error) {
				return map[string][]byte{"nil": nil, "empty": {}}[string(r.Value)], nil
			},
			batch: values("nil", "empty"),
			want:  []string{"record 0 <nil>", `record 1 ""`},
		},
		{
			name: "errors reject single records",
			fn: func(r *Record) ([]byte, error) {
				if string(r.Value) == "bad" {
					return nil, errors.New("bad input: bad")
				}
				return r.Value, nil
			},
			batch: values("ok", "bad", "ok"),
			want:  []string{"keep 0", `error 1 "bad input: bad"`, "keep 2"},
		},
		{
			name: "panics reject single records",
			fn: func(r *Record) ([]byte, error) {
				switch string(r.Value) {
				case "string":
					panic("boom")
				case "error":
					panic(errors.New("an error"))
				case "index":
					return r.Value[10:], nil
				case "nil":
					panic(nil)
				}
				return r.Value, nil
			},
			batch: values("string", "ok", "error", "index", "nil"),
			want: []string{
				`error 0 "panic: boom"`,
				"keep 1",
				`error 2 "panic: an error"`,
				`error 3 "panic: runtime error: slice bounds out of range [10:5]"`,
				`error 4 "panic: panic called with nil argument"`,
			},
		},
		{
			name:  "empty batch",
			fn:    func(r *Record) ([]byte, error) { return r.Value, nil },
			batch: frame(),
			want:  []string{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			setHandlers(t, func() { Map(tc.fn) })
			if got := run(t, abi.OpMap, tc.batch); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestRecordFields(t *testing.T) {
	type seen struct {
		key, value []byte
		ts         int64
		hdr        string
		hasX       bool
		index      uint32
	}
	var got []seen
	setHandlers(t, func() {
		Filter(func(r *Record) (bool, error) {
			x, ok := r.Headers.Get("x")
			got = append(got, seen{bytes.Clone(r.Key), bytes.Clone(r.Value), r.Timestamp, string(x), ok, r.index})
			return true, nil
		})
	})
	batch := frame(
		in{ts: 1722960137000, key: []byte("k"), value: []byte("v"), headers: [][2]string{{"a", "1"}, {"x", "2"}}},
		in{ts: -1, key: []byte{}, value: nil},
	)
	run(t, abi.OpFilter, batch)
	want := []seen{
		{[]byte("k"), []byte("v"), 1722960137000, "2", true, 0},
		{[]byte{}, nil, -1, "", false, 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("records seen:\n%+v\nwant\n%+v", got, want)
	}
}

func TestMapTo(t *testing.T) {
	tests := []struct {
		name  string
		fn    MapToFunc
		batch []byte
		want  []string
	}{
		{
			name:  "setting nothing keeps",
			fn:    func(r *Record, out *Output) error { return nil },
			batch: values("a"),
			want:  []string{"keep 0"},
		},
		{
			name:  "SetValue",
			fn:    func(r *Record, out *Output) error { out.SetValue(append(r.Value, '!')); return nil },
			batch: values("a", ""),
			want:  []string{`record 0 "a!"`, `record 1 "!"`},
		},
		{
			name: "SetValue nil and empty",
			fn: func(r *Record, out *Output) error {
				out.SetValue(map[string][]byte{"e": {}}[string(r.Value)])
				return nil
			},
			batch: values("n", "e"),
			want:  []string{"record 0 <nil>", `record 1 ""`},
		},
		{
			name: "BuildValue",
			fn: func(r *Record, out *Output) error {
				out.BuildValue(func(dst []byte) []byte { return append(append(dst, '<'), r.Value...) })
				return nil
			},
			batch: values("a", "bb"),
			want:  []string{`record 0 "<a"`, `record 1 "<bb"`},
		},
		{
			name: "BuildValue returning nil is empty",
			fn: func(r *Record, out *Output) error {
				out.BuildValue(func(dst []byte) []byte { return nil })
				return nil
			},
			batch: values("a"),
			want:  []string{`record 0 ""`},
		},
		{
			name: "BuildValue returning another slice copies it",
			fn: func(r *Record, out *Output) error {
				out.BuildValue(func(dst []byte) []byte { return []byte("other") })
				return nil
			},
			batch: values("a"),
			want:  []string{`record 0 "other"`},
		},
		{
			name: "all fields",
			fn: func(r *Record, out *Output) error {
				out.SetKey([]byte("key"))
				out.SetTimestamp(42)
				out.AddHeader("h1", []byte("v1"))
				out.AddHeader("h2", nil)
				out.BuildValue(func(dst []byte) []byte { return append(dst, "value"...) })
				return nil
			},
			batch: values("a"),
			want:  []string{`record 0 key="key" ts=42 headers=[h1=v1 h2=] "value"`},
		},
		{
			name: "key only inherits the value",
			fn: func(r *Record, out *Output) error {
				out.SetKey(r.Value)
				return nil
			},
			batch: frame(in{key: []byte("old"), value: []byte("v")}, in{value: nil}),
			want:  []string{`record 0 key="v" "v"`, "record 1 key=<nil> <nil>"},
		},
		{
			name: "empty key is present",
			fn: func(r *Record, out *Output) error {
				out.SetKey([]byte{})
				out.SetValue(r.Value)
				return nil
			},
			batch: values("v"),
			want:  []string{`record 0 key="" "v"`},
		},
		{
			name: "clear headers",
			fn: func(r *Record, out *Output) error {
				out.AddHeader("dropped", nil)
				out.ClearHeaders()
				return nil
			},
			batch: frame(in{value: []byte("v"), headers: [][2]string{{"a", "b"}}}),
			want:  []string{`record 0 headers=[] "v"`},
		},
		{
			name: "error after SetValue leaves only the error",
			fn: func(r *Record, out *Output) error {
				out.SetValue([]byte("partial"))
				return errors.New("failed late")
			},
			batch: values("a", "b"),
			want:  []string{`error 0 "failed late"`, `error 1 "failed late"`},
		},
		{
			name: "panic inside BuildValue leaves only the error",
			fn: func(r *Record, out *Output) error {
				out.BuildValue(func(dst []byte) []byte {
					dst = append(dst, "half"...)
					if string(r.Value) == "p" {
						panic("mid-value")
					}
					return dst
				})
				return nil
			},
			batch: values("p", "ok"),
			want:  []string{`error 0 "panic: mid-value"`, `record 1 "half"`},
		},
		{
			name: "field after the value is a per-record error",
			fn: func(r *Record, out *Output) error {
				out.SetValue(r.Value)
				out.SetKey(r.Value)
				return nil
			},
			batch: values("a"),
			want:  []string{`error 0 "panic: weir: Output.SetKey called after the value was set"`},
		},
		{
			name: "second value is a per-record error",
			fn: func(r *Record, out *Output) error {
				out.SetValue(r.Value)
				out.SetValue(r.Value)
				return nil
			},
			batch: values("a"),
			want:  []string{`error 0 "panic: weir: Output.SetValue called after the value was set"`},
		},
		{
			name: "Output use inside BuildValue is a per-record error",
			fn: func(r *Record, out *Output) error {
				out.BuildValue(func(dst []byte) []byte {
					out.SetTimestamp(1)
					return dst
				})
				return nil
			},
			batch: values("a", "b"),
			want: []string{
				`error 0 "panic: weir: Output.SetTimestamp called inside BuildValue"`,
				`error 1 "panic: weir: Output.SetTimestamp called inside BuildValue"`,
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			setHandlers(t, func() { MapTo(tc.fn) })
			if got := run(t, abi.OpMap, tc.batch); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// valueAddrs runs op over batch and returns, per output entry, whether its
// value was written where the function's dst pointed (no copy).
func TestBuildValueInPlace(t *testing.T) {
	tests := []struct {
		name      string
		size      int // value size
		records   int
		wantPlace int // how many values must have been built in place
	}{
		// The first value of a fresh frame goes to scratch; once the frame
		// has grown, values are built in place.
		{"small values", 10, 100, 90},
		{"large values", 100 << 10, 8, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var dsts []unsafe.Pointer
			setHandlers(t, func() {
				MapTo(func(r *Record, out *Output) error {
					out.SetKey(r.Value[:1])
					out.BuildValue(func(dst []byte) []byte {
						dsts = append(dsts, unsafe.Pointer(unsafe.SliceData(dst[:1])))
						return append(dst, r.Value...)
					})
					return nil
				})
			})
			vals := make([]string, tc.records)
			for i := range vals {
				vals[i] = strings.Repeat(string(rune('a'+i%26)), tc.size)
			}
			batch := values(vals...)
			var p processor
			// Two calls: the second reuses the grown frame.
			for call := 0; call < 2; call++ {
				dsts = dsts[:0]
				out, err := p.run(abi.OpMap, batch)
				if err != nil {
					t.Fatal(err)
				}
				var r abi.OutputReader
				r.Reset(out)
				inPlace := 0
				for i := 0; ; i++ {
					var e abi.Entry
					more, err := r.Next(&e)
					if err != nil || !more {
						break
					}
					if string(e.Value) != vals[i] || string(e.Key) != vals[i][:1] {
						t.Fatalf("entry %d: key %q value %.10q..., want %.10q", i, e.Key, e.Value, vals[i])
					}
					if unsafe.Pointer(unsafe.SliceData(e.Value)) == dsts[i] {
						inPlace++
					}
				}
				if call == 1 && inPlace < tc.wantPlace {
					t.Errorf("%d of %d values built in place, want at least %d", inPlace, tc.records, tc.wantPlace)
				}
			}
		})
	}
}

func TestFlatMap(t *testing.T) {
	tests := []struct {
		name  string
		fn    FlatMapFunc
		batch []byte
		want  []string
	}{
		{
			name: "words",
			fn: func(r *Record, emit *Emitter) error {
				for _, w := range bytes.Fields(r.Value) {
					emit.Emit(w)
				}
				return nil
			},
			batch: values("a b", "", "c"),
			want:  []string{`record 0 "a"`, `record 0 "b"`, `record 2 "c"`},
		},
		{
			name: "keep and emit",
			fn: func(r *Record, emit *Emitter) error {
				emit.Build(func(dst []byte) []byte { return append(append(dst, "alert:"...), r.Value...) })
				emit.Keep()
				emit.Emit(nil)
				return nil
			},
			batch: values("x", "y"),
			want: []string{
				`record 0 "alert:x"`, "keep 0", "record 0 <nil>",
				`record 1 "alert:y"`, "keep 1", "record 1 <nil>",
			},
		},
		{
			name: "Begin with fields, committed by the next call and on return",
			fn: func(r *Record, emit *Emitter) error {
				o := emit.Begin()
				o.SetKey([]byte("k1"))
				o.SetValue([]byte("v1"))
				emit.Keep()
				o = emit.Begin()
				o.SetTimestamp(7)
				return nil
			},
			batch: values("x"),
			want:  []string{`record 0 key="k1" "v1"`, "keep 0", `record 0 ts=7 "x"`},
		},
		{
			name: "Begin without fields keeps",
			fn: func(r *Record, emit *Emitter) error {
				emit.Begin()
				return nil
			},
			batch: values("x"),
			want:  []string{"keep 0"},
		},
		{
			name: "error after emits leaves them before the error entry",
			fn: func(r *Record, emit *Emitter) error {
				emit.Emit([]byte("first"))
				emit.Begin().SetValue([]byte("pending"))
				return errors.New("nope")
			},
			batch: values("x", "y"),
			want:  []string{`record 0 "first"`, `error 0 "nope"`, `record 1 "first"`, `error 1 "nope"`},
		},
		{
			name: "panic",
			fn: func(r *Record, emit *Emitter) error {
				emit.Keep()
				panic("flat boom")
			},
			batch: values("x"),
			want:  []string{"keep 0", `error 0 "panic: flat boom"`},
		},
		{
			name: "Emitter use inside BuildValue is a per-record error",
			fn: func(r *Record, emit *Emitter) error {
				emit.Build(func(dst []byte) []byte {
					emit.Keep()
					return dst
				})
				return nil
			},
			batch: values("x"),
			want:  []string{`error 0 "panic: weir: Emitter used inside BuildValue"`},
		},
		{
			name: "Output of Begin used after the next call",
			fn: func(r *Record, emit *Emitter) error {
				o := emit.Begin()
				o.SetValue([]byte("v"))
				emit.Keep()
				o.SetKey(nil)
				return nil
			},
			batch: values("x"),
			want:  []string{`record 0 "v"`, "keep 0", `error 0 "panic: weir: Output.SetKey called after its record was finished"`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			setHandlers(t, func() { FlatMap(tc.fn) })
			if got := run(t, abi.OpFlatMap, tc.batch); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestFilter(t *testing.T) {
	setHandlers(t, func() {
		Filter(func(r *Record) (bool, error) {
			switch string(r.Value) {
			case "keep":
				return true, nil
			case "err":
				return true, errors.New("filter failed")
			case "panic":
				panic("filter boom")
			}
			return false, nil
		})
	})
	got := run(t, abi.OpFilter, values("keep", "drop", "err", "panic", "keep"))
	want := []string{"keep 0", `error 2 "filter failed"`, `error 3 "panic: filter boom"`, "keep 4"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

func TestNoHandler(t *testing.T) {
	tests := []struct {
		name string
		set  func()
		op   abi.Op
		want string
	}{
		{"map without handlers", func() {}, abi.OpMap, "plugin has no map handler"},
		{"flat_map with a map handler", func() { Map(func(r *Record) ([]byte, error) { return nil, nil }) }, abi.OpFlatMap, "plugin has no flat_map handler"},
		{"filter with a flat_map handler", func() { FlatMap(func(*Record, *Emitter) error { return nil }) }, abi.OpFilter, "plugin has no filter handler"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			setHandlers(t, tc.set)
			got := run(t, tc.op, values("a", "b"))
			want := []string{`error 0 "` + tc.want + `"`, `error 1 "` + tc.want + `"`}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %q, want %q", got, want)
			}
		})
	}
}

func TestMalformedFrame(t *testing.T) {
	good := values("a", "b")
	tests := []struct {
		name  string
		frame []byte
		calls int // records processed before the break
	}{
		{"empty", nil, 0},
		{"truncated count", good[:3], 0},
		{"truncated last record", good[:len(good)-1], 1},
		{"trailing bytes", append(bytes.Clone(good), 0), 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			setHandlers(t, func() {
				Map(func(r *Record) ([]byte, error) { calls++; return r.Value, nil })
			})
			var p processor
			_, err := p.run(abi.OpMap, tc.frame)
			var fe *abi.FrameError
			if !errors.As(err, &fe) {
				t.Fatalf("run error = %v, want an *abi.FrameError", err)
			}
			if calls != tc.calls {
				t.Errorf("the function ran %d times, want %d", calls, tc.calls)
			}
		})
	}
	var p processor
	if _, err := p.run(abi.Op(9), good); err == nil {
		t.Error("run accepted an unknown operation")
	}
}

func TestProcessorReuse(t *testing.T) {
	setHandlers(t, func() {
		Map(func(r *Record) ([]byte, error) { return append([]byte("m:"), r.Value...), nil })
	})
	var p processor
	for i, batch := range [][]string{{"a", "b", "c"}, {"d"}, {}, {"e", "f"}} {
		f := values(batch...)
		out, err := p.run(abi.OpMap, f)
		if err != nil {
			t.Fatal(err)
		}
		got := decode(t, abi.OpMap, f, out)
		if len(got) != len(batch) {
			t.Fatalf("call %d: %d entries for %d records", i, len(got), len(batch))
		}
		for j, v := range batch {
			if want := `record ` + string(rune('0'+j)) + ` "m:` + v + `"`; got[j] != want {
				t.Errorf("call %d: entry %q, want %q", i, got[j], want)
			}
		}
	}
}

func TestInit(t *testing.T) {
	tests := []struct {
		name   string
		fn     InitFunc
		config string
		want   string
	}{
		{"no function", nil, `{"a":1}`, ""},
		{"success", func(c []byte) error { return nil }, `{}`, ""},
		{"error", func(c []byte) error { return errors.New("bad threshold") }, `{"threshold":"x"}`, "bad threshold"},
		{"empty error text", func(c []byte) error { return errors.New("") }, ``, "init failed"},
		{"panic", func(c []byte) error { panic("init boom") }, ``, "panic: init boom"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var seen []byte
			setHandlers(t, func() {
				if tc.fn != nil {
					Init(func(c []byte) error { seen = c; return tc.fn(c) })
				}
			})
			buf := []byte(tc.config)
			if got := runInit(buf); got != tc.want {
				t.Errorf("runInit = %q, want %q", got, tc.want)
			}
			if tc.fn != nil && string(seen) != tc.config {
				t.Errorf("Init saw %q, want %q", seen, tc.config)
			}
			if tc.fn != nil && len(buf) > 0 {
				buf[0] = 'X'
				if seen[0] == 'X' {
					t.Error("the config given to Init aliases the input buffer")
				}
			}
		})
	}
}

func TestRegisterMisuse(t *testing.T) {
	tests := []struct {
		name string
		reg  func()
		want string
	}{
		{"Map twice", func() { Map(identity); Map(identity) }, "weir: map function already registered"},
		{"Map then MapTo", func() { Map(identity); MapTo(func(*Record, *Output) error { return nil }) }, "weir: map function already registered"},
		{"FlatMap twice", func() {
			FlatMap(func(*Record, *Emitter) error { return nil })
			FlatMap(func(*Record, *Emitter) error { return nil })
		}, "weir: flat_map function already registered"},
		{"Filter twice", func() {
			Filter(func(*Record) (bool, error) { return true, nil })
			Filter(func(*Record) (bool, error) { return true, nil })
		}, "weir: filter function already registered"},
		{"Init twice", func() { Init(func([]byte) error { return nil }); Init(func([]byte) error { return nil }) }, "weir: Init function already registered"},
		{"nil Map", func() { Map(nil) }, "weir: nil map function"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			setHandlers(t, func() {})
			defer func() {
				if got := recover(); got != tc.want {
					t.Errorf("panic %v, want %q", got, tc.want)
				}
			}()
			tc.reg()
		})
	}
}

func identity(r *Record) ([]byte, error) { return r.Value, nil }

func TestInputBuffer(t *testing.T) {
	var b inputBuffer
	r1 := b.alloc(10)
	if len(r1) < 10 || len(r1) != minInput {
		t.Fatalf("alloc(10) gave %d bytes", len(r1))
	}
	if r2 := b.alloc(100); &r2[0] != &r1[0] {
		t.Error("a smaller request did not reuse the region")
	}
	r3 := b.alloc(minInput + 1)
	if len(r3) != 2*minInput || &r3[0] == &r1[0] {
		t.Errorf("growing gave %d bytes (same region %v)", len(r3), &r3[0] == &r1[0])
	}
	if b.alloc(maxInput+1) != nil {
		t.Error("alloc over maxInput succeeded")
	}
	if r := b.alloc(0); len(r) == 0 {
		t.Error("alloc(0) gave no region")
	}

	const base = 0x1000
	copy(b.buf, "hello")
	tests := []struct {
		name    string
		addr, n uint32
		want    string
		wantErr bool
	}{
		{"whole", base, 5, "hello", false},
		{"offset", base + 1, 3, "ell", false},
		{"empty anywhere", 7, 0, "", false},
		{"to the end", base + 2*minInput - 1, 1, "\x00", false},
		{"before", base - 1, 2, "", true},
		{"past the end", base + 2*minInput - 1, 2, "", true},
		{"huge", base, ^uint32(0), "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := b.frame(base, tc.addr, tc.n)
			if (err != nil) != tc.wantErr || string(got) != tc.want {
				t.Errorf("frame = %q, %v", got, err)
			}
		})
	}
}

func TestLog(t *testing.T) {
	h := newFakeHost(t)
	Log(LevelInfo, "hello")
	Logf(LevelError, "n=%d", 3)
	Log(LevelDebug, "d")
	Log(LevelWarn, "w")
	want := []string{"info: hello", "error: n=3", "debug: d", "warn: w"}
	if !reflect.DeepEqual(h.logs, want) {
		t.Errorf("logs %q, want %q", h.logs, want)
	}
	if got := LogLevel(7).String(); got != "level(7)" {
		t.Errorf("LogLevel(7) = %q", got)
	}
}

// nullHost is a host whose state calls do not allocate: every get finds
// eight zero bytes and every write succeeds.
type nullHost struct{}

func (nullHost) log(int32, string) {}
func (nullHost) stateGet(_ uint32, _, dst []byte) int32 {
	clear(dst[:8])
	return 8
}
func (nullHost) statePut(uint32, []byte, []byte) int32 { return abi.StatusOK }
func (nullHost) stateDelete(uint32, []byte) int32      { return abi.StatusOK }

func TestZeroAllocs(t *testing.T) {
	saved := host
	host = nullHost{}
	t.Cleanup(func() { host = saved })
	counter := NewValueState("count")
	lut := NewMapState("LUT")
	tests := []struct {
		name string
		op   abi.Op
		set  func()
	}{
		{"map keep", abi.OpMap, func() { Map(identity) }},
		{"map new value", abi.OpMap, func() {
			buf := make([]byte, 0, 64)
			Map(func(r *Record) ([]byte, error) { return append(append(buf[:0], r.Value...), '!'), nil })
		}},
		{"MapTo BuildValue", abi.OpMap, func() {
			MapTo(func(r *Record, out *Output) error {
				out.BuildValue(func(dst []byte) []byte { return append(dst, r.Value...) })
				return nil
			})
		}},
		{"flat_map", abi.OpFlatMap, func() {
			FlatMap(func(r *Record, emit *Emitter) error {
				emit.Emit(r.Value[:1])
				emit.Build(func(dst []byte) []byte { return append(dst, r.Value...) })
				emit.Keep()
				return nil
			})
		}},
		{"filter", abi.OpFilter, func() { Filter(func(r *Record) (bool, error) { return len(r.Value) > 2, nil }) }},
		{"state", abi.OpMap, func() {
			Map(func(r *Record) ([]byte, error) {
				n, _, err := counter.GetInt64(r)
				if err == nil {
					err = counter.PutInt64(r, n+1)
				}
				if err == nil {
					_, _, err = lut.GetFloat64(r, r.Value)
				}
				if err == nil {
					err = lut.PutFloat64(r, r.Value, 1.5)
				}
				return r.Value, err
			})
		}},
	}
	batch := values("one", "two", "three", "four")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			setHandlers(t, tc.set)
			var p processor
			// Warm up: grow the buffers.
			for range 3 {
				if _, err := p.run(tc.op, batch); err != nil {
					t.Fatal(err)
				}
			}
			n := testing.AllocsPerRun(100, func() { p.run(tc.op, batch) })
			if n != 0 {
				t.Errorf("%v allocations per batch, want 0", n)
			}
		})
	}
}

func BenchmarkMapKeep(b *testing.B) {
	saved := handlers
	defer func() { handlers = saved }()
	handlers.mapFn, handlers.mapTo = identity, nil
	batch := values(strings.Split(strings.Repeat("a reading of some sensor,", 64), ",")...)
	var p processor
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.run(abi.OpMap, batch); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRegisteredOps checks weir_ops's answer: the operations registered,
// whatever the module exports.
func TestRegisteredOps(t *testing.T) {
	mapFn := func(r *Record) ([]byte, error) { return r.Value, nil }
	filterFn := func(*Record) (bool, error) { return true, nil }
	tests := []struct {
		name     string
		set, agg func()
		want     []abi.Op
	}{
		{name: "nothing", set: func() {}},
		{name: "map", set: func() { Map(mapFn) }, want: []abi.Op{abi.OpMap}},
		{name: "map to", set: func() { MapTo(func(*Record, *Output) error { return nil }) }, want: []abi.Op{abi.OpMap}},
		{name: "flat_map", set: func() { FlatMap(func(*Record, *Emitter) error { return nil }) }, want: []abi.Op{abi.OpFlatMap}},
		{name: "filter", set: func() { Filter(filterFn) }, want: []abi.Op{abi.OpFilter}},
		{name: "init only", set: func() { Init(func([]byte) error { return nil }) }},
		{name: "aggregate", set: func() {}, agg: func() { Aggregate(sumFuncs()) }, want: []abi.Op{abi.OpAggregate}},
		{name: "map and filter", set: func() { Map(mapFn); Filter(filterFn) }, want: []abi.Op{abi.OpMap, abi.OpFilter}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			setHandlers(t, tc.set)
			setAggregate(t, tc.agg)
			if got, want := registeredOps(), abi.OpSetOf(tc.want...); got != want {
				t.Errorf("registeredOps() = %v, want %v", got, want)
			}
		})
	}
}
