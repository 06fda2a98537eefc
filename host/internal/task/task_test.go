package task

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// javaPartitions are partitions a JVM (OpenJDK 17) printed running
// Kafka's Utils.murmur2, Utils.toPositive and
// BuiltInPartitioner.partitionForKey verbatim, for topics of 7 and 12
// partitions; the Kafka sink's placement test reads them too.
type javaPartitions []struct {
	Key      string `json:"key"`
	P7       int    `json:"p7"`
	P12      int    `json:"p12"`
	JavaHash int32  `json:"java_hash"`
}

// TestOfMatchesJava checks Of against the JVM's partitions.
func TestOfMatchesJava(t *testing.T) {
	b, err := os.ReadFile("testdata/java-partitions.json")
	if err != nil {
		t.Fatal(err)
	}
	var known javaPartitions
	if err := json.Unmarshal(b, &known); err != nil || len(known) == 0 {
		t.Fatalf("testdata/java-partitions.json: %v (%d rows)", err, len(known))
	}
	for _, c := range known {
		if h := int32(Murmur2([]byte(c.Key))); h != c.JavaHash {
			t.Errorf("Murmur2(%q) = %d, Java says %d", c.Key, h, c.JavaHash)
		}
		if p := Of([]byte(c.Key), 7); p != c.P7 {
			t.Errorf("Of(%q, 7) = %d, Java says %d", c.Key, p, c.P7)
		}
		if p := Of([]byte(c.Key), 12); p != c.P12 {
			t.Errorf("Of(%q, 12) = %d, Java says %d", c.Key, p, c.P12)
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
