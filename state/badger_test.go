package state

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// testBadgerOptions keeps badger's memory small so tests run quickly.
func testBadgerOptions(dir string, cache int64) BadgerOptions {
	return BadgerOptions{
		Dir:            dir,
		CacheBytes:     cache,
		MemTableSize:   8 << 20,
		BlockCacheSize: 8 << 20,
		IndexCacheSize: 4 << 20,
		Logger:         slog.New(slog.DiscardHandler),
	}
}

func openTestBadger(t testing.TB, dir string, cache int64) *Badger {
	t.Helper()
	b, err := OpenBadger(testBadgerOptions(dir, cache))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

type scanStore interface {
	Store
	Scanner
}

// storeFactories lists every Store the conformance tests run against.
// Badger runs with its default cache, a tiny cache that evicts almost at
// once, and no cache.
var storeFactories = []struct {
	name string
	open func(t *testing.T) scanStore
}{
	{"memory", func(t *testing.T) scanStore { return NewMemory() }},
	{"badger", func(t *testing.T) scanStore { return openTestBadger(t, t.TempDir(), 0) }},
	{"badger-tiny-cache", func(t *testing.T) scanStore { return openTestBadger(t, t.TempDir(), 400) }},
	{"badger-no-cache", func(t *testing.T) scanStore { return openTestBadger(t, t.TempDir(), -1) }},
}

func set(k, v string) Mutation { return Mutation{Key: []byte(k), Value: []byte(v)} }
func del(k string) Mutation    { return Mutation{Key: []byte(k), Delete: true} }

func scanAll(t *testing.T, s Scanner, prefix string) string {
	t.Helper()
	var out []string
	if err := s.Scan([]byte(prefix), func(k, v []byte) error {
		out = append(out, string(k)+"="+string(v))
		return nil
	}); err != nil {
		t.Fatalf("Scan(%q): %v", prefix, err)
	}
	return strings.Join(out, ",")
}

// TestStoreConformance runs one table of batches and expectations against
// every Store.
func TestStoreConformance(t *testing.T) {
	tests := []struct {
		name    string
		batches [][]Mutation
		get     map[string]string // key -> value; "<absent>" for not found
		scans   map[string]string // prefix -> "k=v,..."
	}{
		{
			name:    "round trip",
			batches: [][]Mutation{{set("a", "1"), set("b", "2")}},
			get:     map[string]string{"a": "1", "b": "2", "c": "<absent>"},
			scans:   map[string]string{"": "a=1,b=2"},
		},
		{
			name:    "empty value",
			batches: [][]Mutation{{set("e", "")}},
			get:     map[string]string{"e": ""},
			scans:   map[string]string{"e": "e="},
		},
		{
			name:    "overwrite",
			batches: [][]Mutation{{set("a", "1")}, {set("a", "22")}, {set("a", "333")}},
			get:     map[string]string{"a": "333"},
		},
		{
			name:    "last write in a batch wins",
			batches: [][]Mutation{{set("a", "1"), set("a", "2"), del("b"), set("b", "3")}},
			get:     map[string]string{"a": "2", "b": "3"},
		},
		{
			name:    "delete",
			batches: [][]Mutation{{set("a", "1"), set("b", "2")}, {del("a")}},
			get:     map[string]string{"a": "<absent>", "b": "2"},
			scans:   map[string]string{"": "b=2"},
		},
		{
			name:    "delete absent key",
			batches: [][]Mutation{{del("zz")}},
			get:     map[string]string{"zz": "<absent>"},
			scans:   map[string]string{"": ""},
		},
		{
			name:    "delete then set again",
			batches: [][]Mutation{{set("a", "1")}, {del("a")}, {set("a", "3")}},
			get:     map[string]string{"a": "3"},
		},
		{
			name: "scan prefixes",
			batches: [][]Mutation{
				{set("op1/k1/x", "1"), set("op1/k1/y", "2"), set("op1/k2/x", "3"), set("op2/k1/x", "4"), set("op10", "5")},
				{del("op1/k1/y")},
			},
			scans: map[string]string{
				"op1/":    "op1/k1/x=1,op1/k2/x=3",
				"op1/k1/": "op1/k1/x=1",
				"op1":     "op1/k1/x=1,op1/k2/x=3,op10=5",
				"op2/":    "op2/k1/x=4",
				"op3":     "",
			},
		},
	}
	for _, f := range storeFactories {
		t.Run(f.name, func(t *testing.T) {
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					s := f.open(t)
					for _, batch := range tt.batches {
						// Copy the table's batch: it is scribbled over below.
						batch = slices.Clone(batch)
						for i := range batch {
							batch[i].Value = bytes.Clone(batch[i].Value)
						}
						if err := s.Apply(batch); err != nil {
							t.Fatal(err)
						}
						// The store must have copied: scribble over the caller's buffers.
						for _, m := range batch {
							for i := range m.Value {
								m.Value[i] = '!'
							}
						}
					}
					for k, want := range tt.get {
						got, found, err := s.Get([]byte(k))
						if err != nil {
							t.Fatal(err)
						}
						if want == "<absent>" {
							if found {
								t.Errorf("Get(%q) = %q, want absent", k, got)
							}
						} else if !found || string(got) != want {
							t.Errorf("Get(%q) = %q, %v; want %q", k, got, found, want)
						}
					}
					for p, want := range tt.scans {
						if got := scanAll(t, s, p); got != want {
							t.Errorf("Scan(%q) = %q, want %q", p, got, want)
						}
					}
				})
			}
		})
	}
}

func TestStoreScanStopsOnError(t *testing.T) {
	for _, f := range storeFactories {
		t.Run(f.name, func(t *testing.T) {
			s := f.open(t)
			if err := s.Apply([]Mutation{set("a", "1"), set("b", "2"), set("c", "3")}); err != nil {
				t.Fatal(err)
			}
			stop := errors.New("stop")
			n := 0
			err := s.Scan(nil, func(k, v []byte) error {
				n++
				if n == 2 {
					return stop
				}
				return nil
			})
			if err != stop || n != 2 {
				t.Fatalf("Scan returned %v after %d calls", err, n)
			}
		})
	}
}

func TestBadgerApplyFailureChangesNothing(t *testing.T) {
	tests := []struct {
		name  string
		batch []Mutation
	}{
		{"empty key", []Mutation{set("a", "new"), set("", "x")}},
		{"reserved prefix", []Mutation{set("a", "new"), set("!badger!head", "x")}},
		{"key too long", []Mutation{set("a", "new"), set(strings.Repeat("k", maxBadgerKey+1), "x")}},
	}
	for _, cache := range []int64{0, -1} {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("cache=%d/%s", cache, tt.name), func(t *testing.T) {
				b := openTestBadger(t, t.TempDir(), cache)
				if err := b.Apply([]Mutation{set("a", "old")}); err != nil {
					t.Fatal(err)
				}
				if err := b.Apply(tt.batch); err == nil {
					t.Fatal("Apply succeeded")
				}
				if v, _, _ := b.Get([]byte("a")); string(v) != "old" {
					t.Fatalf("a = %q after failed Apply", v)
				}
			})
		}
	}
	t.Run("closed", func(t *testing.T) {
		dir := t.TempDir()
		b := openTestBadger(t, dir, 0)
		if err := b.Apply([]Mutation{set("a", "old")}); err != nil {
			t.Fatal(err)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		if err := b.Apply([]Mutation{set("a", "new"), set("b", "x")}); !errors.Is(err, ErrClosed) {
			t.Fatalf("Apply after Close = %v", err)
		}
		if _, _, err := b.Get([]byte("a")); !errors.Is(err, ErrClosed) {
			t.Fatalf("Get after Close = %v", err)
		}
		if err := b.Flush(); !errors.Is(err, ErrClosed) {
			t.Fatalf("Flush after Close = %v", err)
		}
		if err := b.Scan(nil, func(k, v []byte) error { return nil }); !errors.Is(err, ErrClosed) {
			t.Fatalf("Scan after Close = %v", err)
		}
		if err := b.Close(); err != nil {
			t.Fatalf("second Close = %v", err)
		}
		b2 := openTestBadger(t, dir, 0)
		if got := scanAll(t, b2, ""); got != "a=old" {
			t.Fatalf("reopened: %q", got)
		}
	})
}

func TestBadgerPersistence(t *testing.T) {
	tests := []struct {
		name  string
		cache int64
		flush bool // Flush before a crash-free Close anyway
	}{
		{"default cache", 0, false},
		{"flushed", 0, true},
		{"tiny cache", 300, false},
		{"no cache", -1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			b := openTestBadger(t, dir, tt.cache)
			for i := range 100 {
				if err := b.Apply([]Mutation{set(fmt.Sprintf("k%03d", i), fmt.Sprint(i))}); err != nil {
					t.Fatal(err)
				}
			}
			if err := b.Apply([]Mutation{del("k050"), set("k001", "one")}); err != nil {
				t.Fatal(err)
			}
			if tt.flush {
				if err := b.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			b2 := openTestBadger(t, dir, tt.cache)
			for i := range 100 {
				k := fmt.Sprintf("k%03d", i)
				v, found, err := b2.Get([]byte(k))
				want := fmt.Sprint(i)
				if i == 1 {
					want = "one"
				}
				switch {
				case err != nil:
					t.Fatal(err)
				case i == 50 && found:
					t.Fatalf("deleted %s found after reopen", k)
				case i != 50 && (!found || string(v) != want):
					t.Fatalf("%s = %q, %v after reopen; want %q", k, v, found, want)
				}
			}
		})
	}
}

// TestBadgerFlushWritesThrough checks that Flush puts dirty entries in badger
// itself, by reading badger past the cache.
func TestBadgerFlushWritesThrough(t *testing.T) {
	b := openTestBadger(t, t.TempDir(), 0)
	if err := b.Apply([]Mutation{set("a", "1"), set("b", "2")}); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := b.readDB([]byte("a"), b.ver); found {
		t.Fatal("a in badger before Flush; the cache should hold it")
	}
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := b.Apply([]Mutation{del("b")}); err != nil {
		t.Fatal(err)
	}
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	if v, found, _ := b.readDB([]byte("a"), b.ver); !found || string(v) != "1" {
		t.Fatalf("badger a = %q, %v after Flush", v, found)
	}
	if _, found, _ := b.readDB([]byte("b"), b.ver); found {
		t.Fatal("badger still has deleted b after Flush")
	}
}

// TestBadgerEviction writes far more than the cache holds and checks every
// read after eviction.
func TestBadgerEviction(t *testing.T) {
	n := 200_000
	if testing.Short() {
		n = 20_000
	}
	const cache = 1 << 20
	tests := []struct {
		name  string
		batch int
		keys  int
	}{
		{"single-key batches", 1, n},
		{"64-key batches", 64, n / 4}, // smaller to keep -race runs short
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel() // each writes up to ~200 MiB through badger
			n := tt.keys
			b := openTestBadger(t, t.TempDir(), cache)
			mk := func(i, gen int) []byte { // 1 KiB
				v := make([]byte, 1024)
				copy(v, fmt.Sprintf("%08d/%d/", i, gen))
				v[1023] = byte(i)
				return v
			}
			key := func(i int) []byte { return Key(nil, "op", []byte(fmt.Sprint(i%97)), []byte(fmt.Sprintf("%08d", i))) }
			muts := make([]Mutation, 0, tt.batch)
			for i := range n {
				muts = append(muts, Mutation{Key: key(i), Value: mk(i, 0)})
				if len(muts) == tt.batch || i == n-1 {
					if err := b.Apply(muts); err != nil {
						t.Fatal(err)
					}
					muts = muts[:0]
				}
			}
			b.mu.Lock()
			used, entries := b.used, len(b.entries)
			b.mu.Unlock()
			if used > cache {
				t.Fatalf("cache holds %d bytes, bound %d", used, cache)
			}
			t.Logf("cache: %d entries, %d bytes", entries, used)
			// Rewrite every tenth key, delete every seventh.
			for i := 0; i < n; i += 10 {
				if err := b.Apply([]Mutation{{Key: key(i), Value: mk(i, 1)}}); err != nil {
					t.Fatal(err)
				}
			}
			for i := 0; i < n; i += 7 {
				if err := b.Apply([]Mutation{{Key: key(i), Delete: true}}); err != nil {
					t.Fatal(err)
				}
			}
			check := func(i int) {
				v, found, err := b.Get(key(i))
				if err != nil {
					t.Fatal(err)
				}
				if i%7 == 0 {
					if found {
						t.Fatalf("deleted key %d found", i)
					}
					return
				}
				gen := 0
				if i%10 == 0 {
					gen = 1
				}
				if !found || !bytes.Equal(v, mk(i, gen)) {
					t.Fatalf("key %d = %.20q, %v; want %.20q", i, v, found, mk(i, gen))
				}
			}
			r := rand.New(rand.NewPCG(1, 2))
			for range 20_000 {
				check(r.IntN(n))
			}
			// A prefix scan sees the same: every live key with record key "5".
			prefix := Key(nil, "op", []byte("5"), nil)
			want := 0
			for i := 5; i < n; i += 97 {
				if i%7 != 0 {
					want++
				}
			}
			got := 0
			if err := b.Scan(prefix, func(k, v []byte) error {
				var i int
				fmt.Sscanf(string(v), "%08d/", &i)
				if !bytes.Equal(k, key(i)) {
					t.Fatalf("scan: key %q holds value of %d", k, i)
				}
				got++
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("scan found %d keys, want %d", got, want)
			}
		})
	}
}

// TestBadgerScanCache checks that Scan merges the cache over badger: dirty
// values and tombstones override what badger holds.
func TestBadgerScanCache(t *testing.T) {
	tests := []struct {
		name   string
		after  []Mutation // applied after the base state was flushed
		prefix string
		want   string
	}{
		{"flushed only", nil, "p/", "p/a=1,p/b=2,p/c=3"},
		{"dirty overwrite", []Mutation{set("p/b", "22")}, "p/", "p/a=1,p/b=22,p/c=3"},
		{"dirty insert between", []Mutation{set("p/bb", "x")}, "p/", "p/a=1,p/b=2,p/bb=x,p/c=3"},
		{"dirty insert before and after", []Mutation{set("p/0", "x"), set("p/z", "y")}, "p/", "p/0=x,p/a=1,p/b=2,p/c=3,p/z=y"},
		{"tombstone", []Mutation{del("p/a"), del("p/c")}, "p/", "p/b=2"},
		{"tombstone all", []Mutation{del("p/a"), del("p/b"), del("p/c")}, "p/", ""},
		{"other prefix untouched", []Mutation{set("q/a", "9")}, "q", "q/a=9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := openTestBadger(t, t.TempDir(), 0)
			if err := b.Apply([]Mutation{set("p/a", "1"), set("p/b", "2"), set("p/c", "3"), set("pp", "no")}); err != nil {
				t.Fatal(err)
			}
			if err := b.Flush(); err != nil {
				t.Fatal(err)
			}
			// Drop the clean entries so the base state is read from badger.
			b.mu.Lock()
			for _, e := range b.entries {
				b.remove(e)
			}
			b.mu.Unlock()
			if len(tt.after) > 0 {
				if err := b.Apply(tt.after); err != nil {
					t.Fatal(err)
				}
			}
			if got := scanAll(t, b, tt.prefix); got != tt.want {
				t.Fatalf("Scan(%q) = %q, want %q", tt.prefix, got, tt.want)
			}
		})
	}
}

// TestBadgerHugeBatch applies one batch larger than both the cache and
// badger's transaction limit, which falls back to a WriteBatch.
func TestBadgerHugeBatch(t *testing.T) {
	b := openTestBadger(t, t.TempDir(), 1<<20)
	if err := b.Apply([]Mutation{set("k00000", "cached")}); err != nil {
		t.Fatal(err)
	}
	muts := make([]Mutation, 4000)
	for i := range muts {
		muts[i] = Mutation{Key: fmt.Appendf(nil, "k%05d", i), Value: bytes.Repeat([]byte{byte(i)}, 1024)}
	}
	if err := b.Apply(muts); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 1, 2000, 3999} {
		v, found, err := b.Get(fmt.Appendf(nil, "k%05d", i))
		if err != nil || !found || !bytes.Equal(v, muts[i].Value) {
			t.Fatalf("k%05d = %d bytes, %v, %v", i, len(v), found, err)
		}
	}
}

// TestBadgerConcurrent hammers one store from several goroutines under a
// small cache, so evictions race with cache misses; run it with -race.
func TestBadgerConcurrent(t *testing.T) {
	for _, cache := range []int64{4 << 10, -1} {
		t.Run(fmt.Sprint("cache=", cache), func(t *testing.T) {
			b := openTestBadger(t, t.TempDir(), cache)
			var wg sync.WaitGroup
			for g := range 6 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					buf := make([]byte, 8)
					for i := range 600 {
						k := fmt.Appendf(nil, "%d-%d", g, i%40)
						buf[0] = byte(i)
						if err := b.Apply([]Mutation{{Key: k, Value: buf}}); err != nil {
							t.Error(err)
							return
						}
						buf[0] = 0xff // Apply copied
						v, found, err := b.Get(k)
						if err != nil || !found || v[0] != byte(i) {
							t.Errorf("key %s = %v, %v, %v; want %d", k, v, found, err, byte(i))
							return
						}
						// Read another goroutine's keys: any value is fine,
						// as long as it is a whole one.
						if v, _, err := b.Get(fmt.Appendf(nil, "%d-%d", (g+1)%6, i%40)); err != nil || v != nil && len(v) != 8 {
							t.Errorf("foreign read %v, %v", v, err)
							return
						}
						if i%100 == 0 {
							if err := b.Scan([]byte(fmt.Sprint(g, "-")), func(k, v []byte) error { return nil }); err != nil {
								t.Error(err)
								return
							}
						}
					}
				}()
			}
			wg.Wait()
		})
	}
}

func BenchmarkBadgerApply(b *testing.B) {
	for _, bc := range []struct {
		name  string
		cache int64
		batch int
	}{
		{"cached/batch=1", 0, 1},
		{"cached/batch=100", 0, 100},
		{"nocache/batch=1", -1, 1},
		{"nocache/batch=100", -1, 100},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := openTestBadger(b, b.TempDir(), bc.cache)
			val := make([]byte, 100)
			muts := make([]Mutation, bc.batch)
			n := 0
			b.ResetTimer()
			for b.Loop() {
				for j := range muts {
					muts[j] = Mutation{Key: fmt.Appendf(muts[j].Key[:0], "key-%07d", n%1_000_000), Value: val}
					n++
				}
				if err := s.Apply(muts); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "muts/s")
		})
	}
}

func BenchmarkBadgerGet(b *testing.B) {
	const keys = 100_000
	for _, bc := range []struct {
		name  string
		cache int64
	}{
		{"hot", 0},   // every key fits in the default cache
		{"cold", -1}, // no cache: every Get reads badger
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := openTestBadger(b, b.TempDir(), bc.cache)
			val := make([]byte, 100)
			var muts []Mutation
			for i := range keys {
				muts = append(muts, Mutation{Key: fmt.Appendf(nil, "key-%07d", i), Value: val})
				if len(muts) == 1000 {
					if err := s.Apply(muts); err != nil {
						b.Fatal(err)
					}
					muts = muts[:0]
				}
			}
			if err := s.Flush(); err != nil {
				b.Fatal(err)
			}
			key := make([]byte, 0, 16)
			i := 0
			b.ResetTimer()
			for b.Loop() {
				key = fmt.Appendf(key[:0], "key-%07d", (i*7919)%keys)
				i++
				if _, found, err := s.Get(key); err != nil || !found {
					b.Fatal(found, err)
				}
			}
			b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "gets/s")
		})
	}
}

// TestBadgerValueLogGC runs the GC loop at a short interval while writing and
// checks Close stops it cleanly.
func TestBadgerValueLogGC(t *testing.T) {
	old := valueLogGCInterval
	valueLogGCInterval = 5 * time.Millisecond
	defer func() { valueLogGCInterval = old }()
	b := openTestBadger(t, t.TempDir(), -1)
	for i := range 200 {
		if err := b.Apply([]Mutation{set(fmt.Sprint(i%10), strings.Repeat("v", 100))}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(30 * time.Millisecond)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestBadgerTakeWritten: TakeWritten counts the mutations applied since
// the last call, and their keys' and values' bytes, whether they went
// through the cache or straight to badger, and not the failed ones.
func TestBadgerTakeWritten(t *testing.T) {
	for _, capacity := range []int64{-1, 1 << 20} {
		t.Run(fmt.Sprint("cache ", capacity), func(t *testing.T) {
			b, err := OpenBadger(testBadgerOptions(t.TempDir(), capacity))
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if err := b.Apply([]Mutation{{Key: []byte("k1"), Value: []byte("value")}, {Key: []byte("k22"), Delete: true}}); err != nil {
				t.Fatal(err)
			}
			if err := b.Apply([]Mutation{{Key: nil, Value: []byte("x")}}); err == nil {
				t.Fatal("an empty key was applied")
			}
			if got, want := b.TakeWritten(), (Written{Writes: 2, Bytes: 2 + 5 + 3}); got != want {
				t.Errorf("first take %+v, want %+v", got, want)
			}
			if err := b.Apply([]Mutation{{Key: []byte("é"), Value: []byte("")}}); err != nil {
				t.Fatal(err)
			}
			if got, want := b.TakeWritten(), (Written{Writes: 1, Bytes: 2}); got != want {
				t.Errorf("second take %+v, want %+v", got, want)
			}
		})
	}
}
