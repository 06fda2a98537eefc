package task

import (
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestOfMatchesJava checks Of against partitions a JVM printed running
// Kafka's Utils.murmur2, Utils.toPositive and
// BuiltInPartitioner.partitionForKey verbatim.
func TestOfMatchesJava(t *testing.T) {
	for _, c := range []struct {
		key      string
		p7, p12  int
		javaHash int32
	}{
		{"21", 3, 0, -973932308},
		{"foobar", 0, 6, -790332482},
		{"abc", 4, 3, 479470107},
		{"a-little-bit-long-string", 1, 8, -985981536},
		{"a-little-bit-longer-string", 0, 11, -1486304829},
		{"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", 3, 5, -58897971},
		{"", 2, 9, 275646681},
		{"user-1", 3, 8, 1404122828},
		{"order/42", 3, 10, 1289431762},
		{"ключ", 4, 8, 2122343024},
		{"\u00ff\u0000", 1, 0, 705667656},
	} {
		if h := int32(Murmur2([]byte(c.key))); h != c.javaHash {
			t.Errorf("Murmur2(%q) = %d, Java says %d", c.key, h, c.javaHash)
		}
		if p := Of([]byte(c.key), 7); p != c.p7 {
			t.Errorf("Of(%q, 7) = %d, Java says %d", c.key, p, c.p7)
		}
		if p := Of([]byte(c.key), 12); p != c.p12 {
			t.Errorf("Of(%q, 12) = %d, Java says %d", c.key, p, c.p12)
		}
	}
}

// TestOfMatchesFranzGo checks Of against the partition franz-go's default
// partitioner gives random keys, for partition counts 1 to 64.
func TestOfMatchesFranzGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	part := kgo.StickyKeyPartitioner(nil).ForTopic("t")
	for range 20000 {
		key := make([]byte, rng.IntN(40))
		for i := range key {
			key[i] = byte(rng.Uint32())
		}
		n := 1 + rng.IntN(64)
		if got, want := Of(key, n), part.Partition(&kgo.Record{Key: key}, n); got != want {
			t.Fatalf("Of(%x, %d) = %d, franz-go partitions it to %d", key, n, got, want)
		}
	}
}

func FuzzOf(f *testing.F) {
	f.Add([]byte("user-1"), 12)
	f.Add([]byte{}, 1)
	part := kgo.StickyKeyPartitioner(nil).ForTopic("t")
	f.Fuzz(func(t *testing.T, key []byte, n int) {
		n = 1 + (n&0xffff)%1024
		if key == nil {
			key = []byte{} // franz-go spreads nil keys; Of gives them a task
		}
		got := Of(key, n)
		if got < 0 || got >= n {
			t.Fatalf("Of(%x, %d) = %d, outside [0, %d)", key, n, got, n)
		}
		if want := part.Partition(&kgo.Record{Key: key}, n); got != want {
			t.Fatalf("Of(%x, %d) = %d, franz-go partitions it to %d", key, n, got, want)
		}
	})
}

func BenchmarkOf(b *testing.B) {
	key := []byte("sensor-0000042")
	for b.Loop() {
		_ = Of(key, 12)
	}
}
