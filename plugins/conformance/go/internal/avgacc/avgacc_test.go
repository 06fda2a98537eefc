package avgacc

import (
	"slices"
	"testing"

	weir "github.com/weir-stream/weir/guest-sdk/go"
)

// TestCodec: the accumulator is 16 bytes, the sum's float64 then the
// count's int64, so that the raw and typed plugins' accumulators merge.
func TestCodec(t *testing.T) {
	a := Acc{Sum: 3.5, Count: 2}
	b := Codec.Append(nil, a)
	want := weir.AppendInt64(weir.AppendFloat64(nil, 3.5), 2)
	if !slices.Equal(b, want) {
		t.Fatalf("encoded %x, want %x", b, want)
	}
	if got, err := Codec.Decode(b); err != nil || got != a {
		t.Errorf("decoded %+v, %v", got, err)
	}
	if _, err := Codec.Decode(b[:15]); err == nil {
		t.Error("a short accumulator decoded")
	}
}

func TestResult(t *testing.T) {
	for _, tc := range []struct {
		a    Acc
		want string
	}{
		{Acc{}.Add(1).Add(2.5).Add(-0.5), `{"avg":1.0,"count":3}`},
		{Merge(Acc{Sum: 3, Count: 1}, Acc{Sum: 4, Count: 1}), `{"avg":3.5,"count":2}`},
		{Acc{}, `{"avg":null,"count":0}`},
	} {
		if got, err := Result(nil, tc.a); err != nil || string(got) != tc.want {
			t.Errorf("Result(%+v) = %s, %v; want %s", tc.a, got, err, tc.want)
		}
	}
}
