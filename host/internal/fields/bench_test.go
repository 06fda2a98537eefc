package fields

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/weir-stream/weir/abi"
)

// bidFields are the fields a Nexmark query reading bids declares.
var bidFields = []abi.FieldDecl{
	{Path: "auction", Type: abi.TypeInt, Flags: abi.FieldStrict},
	{Path: "price", Type: abi.TypeInt, Flags: abi.FieldStrict},
	{Path: "channel", Type: abi.TypeString},
	{Path: "dateTime", Type: abi.TypeInt, Flags: abi.FieldRequired | abi.FieldStrict},
}

func bid(i int) []byte {
	return []byte(`{"auction":` + strconv.Itoa(1000+i%97) + `,"bidder":` + strconv.Itoa(2001+i) + `,"price":` + strconv.Itoa(123456789+i) +
		`,"channel":"Google","url":"https://www.nexmark.com/mqb/ceu/item.htm?query=1&channel_id=` + strconv.Itoa(i) +
		`","dateTime":` + strconv.Itoa(1700000000000+i) + `,"extra":"nghlcqwwzzfivgmgsanmuqhmhjkdpaokuvzhldbvvmjgpzwysxskjeqaurhmodugatcgilqgyyd"}`)
}

func bidRecords(n int) []Record {
	recs := make([]Record, n)
	for i := range recs {
		recs[i] = Record{Timestamp: int64(i), Key: []byte(strconv.Itoa(i % 10)), Value: bid(i)}
	}
	return recs
}

const benchBatch = 512

// BenchmarkExtract and BenchmarkExtractEncodingJSON read the same four
// fields of a batch of Nexmark bids; ns/op is per record.
func BenchmarkExtract(b *testing.B) {
	x := NewExtractor(mustDecl(b, bidFields...))
	recs := bidRecords(benchBatch)
	b.SetBytes(int64(len(recs[0].Value)))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if i%benchBatch == 0 {
			if _, err := x.Extract(recs); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkExtractEncodingJSON(b *testing.B) {
	recs := bidRecords(benchBatch)
	b.SetBytes(int64(len(recs[0].Value)))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		var bid struct {
			Auction  int64  `json:"auction"`
			Price    int64  `json:"price"`
			Channel  string `json:"channel"`
			DateTime int64  `json:"dateTime"`
		}
		if err := json.Unmarshal(recs[i%benchBatch].Value, &bid); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkApplyPatch and BenchmarkApplyPatchEncodingJSON set one field of
// a Nexmark bid.
func BenchmarkApplyPatch(b *testing.B) {
	var w abi.TypedOutputWriter
	w.Reset()
	w.BeginPatch(0, 0, nil, 0)
	w.SetFloat("price", 1234567.89)
	ops := decodePatch(b, w.Bytes())
	doc := bid(1)
	var p Patcher
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.ApplyPatch(doc, ops); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkApplyPatchAt sets the same field as BenchmarkApplyPatch, a
// declared one, at the span Extract found: no second pass over the bid.
func BenchmarkApplyPatchAt(b *testing.B) {
	var w abi.TypedOutputWriter
	w.Reset()
	w.BeginPatch(0, 0, nil, 0)
	w.SetFloat("price", 1234567.89)
	ops := decodePatch(b, w.Bytes())
	d := mustDecl(b, bidFields...)
	doc := bid(1)
	batch, err := NewExtractor(d).Extract([]Record{{Value: doc}})
	if err != nil {
		b.Fatal(err)
	}
	var p Patcher
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.ApplyPatchAt(doc, ops, d, batch.Spans); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkApplyPatchEncodingJSON(b *testing.B) {
	doc := bid(1)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		var m map[string]any
		if err := json.Unmarshal(doc, &m); err != nil {
			b.Fatal(err)
		}
		m["price"] = 1234567.89
		if _, err := json.Marshal(m); err != nil {
			b.Fatal(err)
		}
	}
}

// decodePatch returns the operations of the first entry of a typed
// output frame, which must be a patch.
func decodePatch(t testing.TB, frame []byte) abi.PatchOps {
	t.Helper()
	var r abi.TypedOutputReader
	var e abi.TypedEntry
	if _, err := r.Reset(frame); err != nil {
		t.Fatal(err)
	}
	if ok, err := r.Next(&e); !ok || err != nil || e.Kind != abi.KindPatch {
		t.Fatalf("the frame's first entry is %+v, %v", e, err)
	}
	return e.Ops
}
