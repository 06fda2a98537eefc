package abi

import (
	"bytes"
	"slices"
	"testing"
)

// FuzzSplitPath checks that a path that splits joins back to itself (the
// escapes are canonical), and that the non-allocating splitter agrees.
func FuzzSplitPath(f *testing.F) {
	for _, p := range []string{"a", "a.b", `a\.b`, `a\\.b`, "a..b", `a\`, `\.\\`, "é.ü", ".", ""} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, path string) {
		segs, err := SplitPath(path)
		bsegs, _, berr := AppendPathSegments(nil, nil, []byte(path))
		if (err == nil) != (berr == nil) || (err == nil) != (CheckPath([]byte(path)) == nil) {
			t.Fatalf("SplitPath: %v, AppendPathSegments: %v", err, berr)
		}
		if err != nil {
			return
		}
		for i, s := range segs {
			if s == "" || s != string(bsegs[i]) {
				t.Fatalf("segment %d: %q and %q", i, s, bsegs[i])
			}
		}
		if got := string(AppendPath(nil, segs...)); got != path {
			t.Fatalf("AppendPath(%q) = %q, want %q", segs, got, path)
		}
	})
}

// FuzzFieldDeclsDecode checks that any declaration frame decodes or fails
// cleanly, and that one that decodes is the encoding of what it decodes
// to.
func FuzzFieldDeclsDecode(f *testing.F) {
	f.Add(AppendFieldDecls(nil, []FieldDecl{{Path: "a.b", Type: TypeInt, Flags: FieldStrict}, {Path: `c\.d`, Type: TypeRaw}}))
	f.Add(AppendFieldDecls(nil, nil))
	f.Add([]byte{1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, frame []byte) {
		fields, err := ParseFieldDecls(frame)
		if err != nil {
			return
		}
		if out := AppendFieldDecls(nil, fields); !bytes.Equal(out, frame) {
			t.Fatalf("re-encoded declaration differs:\n got %x\nwant %x", out, frame)
		}
	})
}

// FuzzTypedBatchDecode checks that any typed batch frame decodes or fails
// cleanly, and that the columns of one that decodes encode to a frame that
// decodes to the same columns.
func FuzzTypedBatchDecode(f *testing.F) {
	valid, err := AppendTypedBatch(nil, 3, testColumns())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	empty, _ := AppendTypedBatch(nil, 0, []Column{{Type: TypeInt}, {Type: TypeString, Statuses: []byte{}, Values: make([]byte, 4)}})
	f.Add(empty)
	f.Fuzz(func(t *testing.T, frame []byte) {
		var b TypedBatch
		n, err := b.Reset(frame)
		if err != nil {
			return
		}
		cols := make([]Column, b.Fields()+TypedFirstFieldColumn)
		for k := range cols {
			cols[k] = b.Column(k)
			readAll(cols[k], n)
		}
		out, err := AppendTypedBatch(nil, n, cols)
		if err != nil {
			t.Fatalf("re-encoding: %v", err)
		}
		var b2 TypedBatch
		if _, err := b2.Reset(out); err != nil {
			t.Fatalf("re-encoded frame: %v", err)
		}
		for k := range cols {
			if !sameColumn(b2.Column(k), cols[k]) {
				t.Fatalf("column %d differs after re-encoding", k)
			}
		}
	})
}

// readAll reads every value of c, which must not panic.
func readAll(c Column, n int) {
	for i := 0; i < n; i++ {
		c.Status(i)
		switch c.Type {
		case TypeInt:
			c.Int(i)
		case TypeFloat:
			c.Float(i)
		case TypeBool:
			c.Bool(i)
		default:
			c.Bytes(i)
		}
	}
}

// FuzzTypedAddDecode checks that any typed add frame decodes or fails
// cleanly, and that one that decodes re-encodes to the same bytes.
func FuzzTypedAddDecode(f *testing.F) {
	valid, err := AppendTypedAdd(nil, []TypedGroup{{Acc: []byte("a"), Records: 1}, {Records: 2}}, testColumns())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	f.Fuzz(func(t *testing.T, frame []byte) {
		var r TypedAddReader
		if _, err := r.Reset(frame); err != nil {
			return
		}
		var groups []TypedGroup
		next := 0
		for {
			acc, first, n, ok := r.NextGroup()
			if !ok {
				break
			}
			if first != next {
				t.Fatalf("group %d starts at record %d, want %d", len(groups), first, next)
			}
			next += n
			groups = append(groups, TypedGroup{Acc: acc, Records: n})
		}
		cols := make([]Column, r.Batch.Fields()+TypedFirstFieldColumn)
		for k := range cols {
			cols[k] = r.Batch.Column(k)
		}
		out, err := AppendTypedAdd(nil, groups, cols)
		if err != nil {
			t.Fatalf("re-encoding: %v", err)
		}
		var r2 TypedAddReader
		if _, err := r2.Reset(out); err != nil || !bytes.Equal(out[:len(r.table)], frame[:len(r.table)]) {
			t.Fatalf("re-encoded group table differs (%v):\n got %x\nwant %x", err, out, frame)
		}
	})
}

// FuzzTypedOutputDecode checks that any typed output frame decodes or
// fails cleanly, and that one that decodes is exactly what
// TypedOutputWriter writes for the entries it decodes to.
func FuzzTypedOutputDecode(f *testing.F) {
	var w TypedOutputWriter
	w.Reset()
	w.Keep(0)
	w.BeginPatch(0, PatchFlagKey|PatchFlagTimestamp, []byte("k"), 9)
	w.SetInt("a.b", 1<<53+1)
	w.SetFloat("f", 0.30000000000000004)
	w.SetBool("t", true)
	w.SetString(`s\.x`, "\u00e9\U0001F600")
	w.SetRaw("", []byte(`[1,{"a":null}]`))
	w.SetNull("n")
	w.Remove("r")
	w.BeginPatch(1, PatchFlagNew, nil, 0)
	w.Error(2, "bad")
	f.Add(slices.Clone(w.Bytes()), 3)
	f.Add([]byte{1, 0, 0, 0, 3, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0}, 1)
	f.Fuzz(func(t *testing.T, frame []byte, n int) {
		var r TypedOutputReader
		if _, err := r.Reset(frame); err != nil {
			return
		}
		var w TypedOutputWriter
		w.Reset()
		var e TypedEntry
		prev := -1
		for {
			ok, err := r.Next(&e)
			if err != nil {
				return
			}
			if !ok {
				break
			}
			for _, op := range Ops {
				CheckTypedOrder(op, n, prev, &e)
			}
			prev = e.Index
			rewrite(&w, &e)
		}
		if out := w.Bytes(); !bytes.Equal(out, frame) {
			t.Fatalf("re-encoded frame differs:\n got %x\nwant %x", out, frame)
		}
	})
}

// rewrite appends e to w.
func rewrite(w *TypedOutputWriter, e *TypedEntry) {
	switch e.Kind {
	case KindKeep:
		w.Keep(e.Index)
	case KindError:
		w.Error(e.Index, string(e.Message))
	case KindPatch:
		w.BeginPatch(e.Index, e.Flags, e.Key, e.Time)
		for _, op := range e.Ops.All() {
			rewriteOp(w, op)
		}
	}
}

func rewriteOp(w *TypedOutputWriter, op PatchOp) {
	path := string(op.Path)
	if op.Kind == PatchOpRemove {
		w.Remove(path)
		return
	}
	switch op.Type {
	case TypeNull:
		w.SetNull(path)
	case TypeInt:
		w.SetInt(path, op.Int)
	case TypeFloat:
		w.SetFloat(path, op.Float)
	case TypeBool:
		w.SetBool(path, op.Bool)
	case TypeString:
		w.SetString(path, string(op.Bytes))
	case TypeRaw:
		w.SetRaw(path, op.Bytes)
	}
}
