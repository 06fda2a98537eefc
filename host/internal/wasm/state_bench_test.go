package wasm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/weir-stream/weir/abi"
	"github.com/weir-stream/weir/host/internal/record"
	"github.com/weir-stream/weir/state"
)

// Keyed state through the UDF host functions: testdata/statebench.wat makes
// exactly one state access per record (one state_get, one state_put, or one
// state_get then state_put), and the benchmarks below run it through the real
// Worker.Process path: batch encoding, the guest call, the host functions
// with their per-batch overlay, output decoding, and the overlay's commit
// (one Store.Apply per batch) for writes.
//
// Each benchmark reports ns/get, ns/put or ns/get+put: the time per record,
// which is the time per state access including the ABI path around it. The
// baseline (StateWAT/none) runs the same module answering each record the
// same way without a state call; subtract it for the cost of the access
// alone.
//
// Every batch holds stateBenchBatch records with distinct keys, and the
// batches cycle through stateBenchKeys record keys (or a case's smaller hot
// set), so each access is to one of that many state keys, in the same order
// every pass.

const (
	stateBenchBatch  = 512     // records per batch, the pipeline default
	stateBenchKeys   = 1 << 16 // record keys, hence state keys, cycled through
	stateBenchValue  = 32      // bytes in every state value
	stateBenchOp     = "statebench"
	stateBenchChunk  = 4096      // keys per Apply when preloading
	stateBenchSmallC = 256 << 10 // a cache of about 1,700 entries
)

// stateBenchKey is the record key of key number i.
func stateBenchKey(i int) []byte { return fmt.Appendf(nil, "key-%08d", i) }

// stateBenchVal is a stateBenchValue-byte value naming key i and what made it.
func stateBenchVal(what string, i int) []byte {
	v := fmt.Appendf(nil, "%s:%08d:", what, i)
	for len(v) < stateBenchValue {
		v = append(v, '.')
	}
	return v[:stateBenchValue]
}

// The values the state holds before a benchmark (stored) and the values its
// records carry, which put writes (written).
func storedVal(i int) []byte  { return stateBenchVal("stored", i) }
func writtenVal(i int) []byte { return stateBenchVal("written", i) }

// stateBenchStateKey is the store key of the guest's slot "v" for key number i.
func stateBenchStateKey(i int) []byte {
	return state.Key(nil, stateBenchOp, stateBenchKey(i), []byte("v"))
}

// stateBenchBatches makes the batches for keys [first, first+n), in order,
// each record's value writtenVal.
func stateBenchBatches(first, n int) [][]record.Record {
	var batches [][]record.Record
	for b := 0; b < n; b += stateBenchBatch {
		batch := make([]record.Record, min(stateBenchBatch, n-b))
		for j := range batch {
			k := first + b + j
			batch[j] = record.Record{
				Key:       stateBenchKey(k),
				Value:     writtenVal(k),
				Timestamp: int64(k),
				Origin:    record.Origin{Source: "bench", Partition: -1, Offset: int64(k)},
			}
		}
		batches = append(batches, batch)
	}
	return batches
}

// preload writes storedVal for keys [0, n) in chunks.
func preload(st state.Store, n int) error {
	muts := make([]state.Mutation, 0, stateBenchChunk)
	for i := 0; i < n; i++ {
		muts = append(muts, state.Mutation{Key: stateBenchStateKey(i), Value: storedVal(i)})
		if len(muts) == cap(muts) || i == n-1 {
			if err := st.Apply(muts); err != nil {
				return err
			}
			muts = muts[:0]
		}
	}
	return nil
}

// storeKind says how a case's store is made.
type storeKind int

const (
	memoryStore storeKind = iota
	// badgerStore: preload into badger, Close (which flushes the cache and
	// badger's memtable to disk) and reopen with the case's cache, so
	// nothing is in weir's cache to begin with.
	badgerStore
)

// stateBenchCase is one benchmark: a guest op against a store.
type stateBenchCase struct {
	name  string
	op    string // the module's config op: get, put, rmw or none
	store storeKind
	// cache is BadgerOptions.CacheBytes (0 default, negative no cache).
	cache int64
	// preload says the store holds storedVal for every key first; warm
	// that every key was read once after the reopen, so it is cached.
	preload, warm bool
	// absent makes the records' keys ones the store does not hold (the
	// preloaded keys are there, but not these).
	absent bool
	// keys, when set, shrinks the key set to one this small (a hot set
	// that stays in the CPU's caches).
	keys int
}

func (c stateBenchCase) unit() string {
	switch c.op {
	case "get", "put":
		return "ns/" + c.op
	case "rmw":
		return "ns/get+put"
	}
	return "ns/record"
}

var stateBenchCases = []stateBenchCase{
	{name: "none", op: "none", store: memoryStore},

	{name: "memory/get", op: "get", store: memoryStore, preload: true},
	{name: "memory/get-hot512", op: "get", store: memoryStore, preload: true, keys: stateBenchBatch},
	{name: "memory/get-absent", op: "get", store: memoryStore, preload: true, absent: true},
	{name: "memory/put", op: "put", store: memoryStore, preload: true},
	{name: "memory/get+put", op: "rmw", store: memoryStore, preload: true},

	// Reads. hit: every key is in weir's write-back cache. miss-nocache:
	// the cache is disabled, so every get reads badger. miss-smallcache:
	// the cache holds ~1,700 of the 65,536 keys and the keys are read in a
	// cycle, so LRU evicts each key before it comes round again: every get
	// misses, reads badger and inserts into the cache (evicting).
	{name: "badger/get-hit", op: "get", store: badgerStore, preload: true, warm: true},
	{name: "badger/get-hit-hot512", op: "get", store: badgerStore, preload: true, warm: true, keys: stateBenchBatch},
	{name: "badger/get-miss-nocache", op: "get", store: badgerStore, cache: -1, preload: true},
	{name: "badger/get-miss-smallcache", op: "get", store: badgerStore, cache: stateBenchSmallC, preload: true},
	{name: "badger/get-absent-nocache", op: "get", store: badgerStore, cache: -1, preload: true, absent: true},

	// Writes. cache: every batch's Apply only updates cached entries.
	// spill-smallcache: each Apply evicts as many dirty entries as it
	// adds, writing them to badger in one transaction. nocache: each Apply
	// is one badger transaction of the batch's 512 writes.
	{name: "badger/put-cache", op: "put", store: badgerStore, preload: true, warm: true},
	{name: "badger/put-spill-smallcache", op: "put", store: badgerStore, cache: stateBenchSmallC, preload: true},
	{name: "badger/put-nocache", op: "put", store: badgerStore, cache: -1, preload: true},

	{name: "badger/get+put-hit", op: "rmw", store: badgerStore, preload: true, warm: true},
	{name: "badger/get+put-miss-smallcache", op: "rmw", store: badgerStore, cache: stateBenchSmallC, preload: true},
}

// stateBenchEnv is a case set up: its store and a worker running the
// module over it.
type stateBenchEnv struct {
	c       stateBenchCase
	first   int // the first record key of the batches
	store   state.Store
	w       *Worker
	batches [][]record.Record
	closers []func() error
}

func (e *stateBenchEnv) close() error {
	var errs []error
	for i := len(e.closers) - 1; i >= 0; i-- {
		errs = append(errs, e.closers[i]())
	}
	e.closers = nil
	return errors.Join(errs...)
}

func quietBadger(dir string, cache int64) (*state.Badger, error) {
	return state.OpenBadger(state.BadgerOptions{
		Dir:        dir,
		CacheBytes: cache,
		Logger:     slog.New(slog.DiscardHandler),
	})
}

// setup makes c's store, over keys keys, in dir (a new temporary directory,
// removed by close, when dir is ""), and loads the module over it with rt.
// On error it closes what it made.
func (c stateBenchCase) setup(rt *Runtime, dir string, keys int) (_ *stateBenchEnv, err error) {
	if c.keys != 0 {
		keys = min(keys, c.keys)
	}
	e := &stateBenchEnv{c: c}
	defer func() {
		if err != nil {
			err = errors.Join(err, e.close())
		}
	}()
	if dir == "" {
		// A benchmark's own TempDir is removed after each b.N tried, while
		// the store stays open across them.
		if dir, err = os.MkdirTemp("", "statebench"); err != nil {
			return nil, err
		}
		e.closers = append(e.closers, func() error { return os.RemoveAll(dir) })
	}
	switch c.store {
	case memoryStore:
		st := state.NewMemory()
		if c.preload {
			if err := preload(st, keys); err != nil {
				return nil, err
			}
		}
		e.store = st
	case badgerStore:
		if c.preload {
			st, err := quietBadger(dir, 0)
			if err != nil {
				return nil, err
			}
			err = preload(st, keys)
			if cerr := st.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return nil, err
			}
		}
		st, err := quietBadger(dir, c.cache)
		if err != nil {
			return nil, err
		}
		e.closers = append(e.closers, st.Close)
		e.store = st
		if c.warm {
			for i := 0; i < keys; i++ {
				v, ok, err := st.Get(stateBenchStateKey(i))
				if err != nil || !ok || !bytes.Equal(v, storedVal(i)) {
					return nil, fmt.Errorf("warming key %d: got %q, %v, %v", i, v, ok, err)
				}
			}
		}
	}

	cfg := PluginConfig{
		Operator:   stateBenchOp,
		Path:       "testdata/statebench.wasm",
		Op:         abi.OpMap,
		InitConfig: fmt.Appendf(nil, `{"op":%q}`, c.op),
		Store:      e.store,
	}
	if cfg.Wasm, err = os.ReadFile(filepath.Join("testdata", "statebench.wasm")); err != nil {
		return nil, err
	}
	ctx := context.Background()
	p, err := rt.Load(ctx, cfg)
	if err != nil {
		return nil, err
	}
	e.closers = append(e.closers, func() error { return p.Close(ctx) })
	w, err := p.NewWorker(ctx)
	if err != nil {
		return nil, err
	}
	e.closers = append(e.closers, func() error { return w.Close(ctx) })
	e.w = w
	if c.absent {
		e.first = keys
	}
	e.batches = stateBenchBatches(e.first, keys)
	return e, nil
}

// check runs the first batch and checks what the guest answered and what
// the store holds afterwards, so that a benchmark cannot silently measure a
// failing path.
func (e *stateBenchEnv) check() error {
	out := new(record.Output)
	batch := e.batches[0]
	if err := e.w.Process(context.Background(), batch, out); err != nil {
		return err
	}
	if len(out.Dead) != 0 || len(out.Records) != len(batch) {
		return fmt.Errorf("%d records and %d dead letters for %d records (first dead: %v)",
			len(out.Records), len(out.Dead), len(batch), out.Dead)
	}
	for j, r := range out.Records {
		k := e.first + j
		var want []byte // "get" of an absent key answers an empty value
		switch {
		case e.c.op == "none" || e.c.op == "put":
			want = writtenVal(k)
		case e.c.preload && !e.c.absent:
			want = storedVal(k)
		}
		if !bytes.Equal(r.Value, want) {
			return fmt.Errorf("record %d (key %d): guest answered %q, want %q", j, k, r.Value, want)
		}
		if !bytes.Equal(r.Key, stateBenchKey(k)) {
			return fmt.Errorf("record %d: key %q", j, r.Key)
		}
		stored, ok, err := e.store.Get(stateBenchStateKey(k))
		if err != nil {
			return err
		}
		want, wantOK := storedVal(k), e.c.preload && !e.c.absent
		if e.c.op == "put" || e.c.op == "rmw" {
			want, wantOK = writtenVal(k), true
		}
		if ok != wantOK || (ok && !bytes.Equal(stored, want)) {
			return fmt.Errorf("key %d holds %q (present %v) after the batch, want %q (present %v)",
				k, stored, ok, want, wantOK)
		}
	}
	return nil
}

// BenchmarkStateWAT measures state_get and state_put through the host
// functions; see the comment at the top of this file.
func BenchmarkStateWAT(b *testing.B) {
	rt := newRuntime(b, nil)
	for _, c := range stateBenchCases {
		var env *stateBenchEnv
		b.Run(c.name, func(b *testing.B) {
			// The function runs once per b.N tried; set up only once.
			if env == nil {
				var err error
				if env, err = c.setup(rt, "", stateBenchKeys); err != nil {
					b.Fatal(err)
				}
				if err := env.check(); err != nil {
					b.Fatal(err)
				}
			}
			ctx := context.Background()
			out := new(record.Output)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// Batch 0 ran last in check; start after it.
				batch := env.batches[(i+1)%len(env.batches)]
				out.Reset()
				if err := env.w.Process(ctx, batch, out); err != nil {
					b.Fatal(err)
				}
				if len(out.Dead) != 0 || len(out.Records) != len(batch) {
					b.Fatalf("%d records and %d dead letters for %d records",
						len(out.Records), len(out.Dead), len(batch))
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*stateBenchBatch), c.unit())
		})
		if env != nil {
			if err := env.close(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// TestStateBenchCases runs every benchmark case once, over two batches of
// keys, so the module and the checks the benchmarks rely on stay working.
func TestStateBenchCases(t *testing.T) {
	rt := newRuntime(t, nil)
	for _, c := range stateBenchCases {
		t.Run(c.name, func(t *testing.T) {
			if c.store == badgerStore && testing.Short() {
				t.Skip("opens badger")
			}
			env, err := c.setup(rt, t.TempDir(), 2*stateBenchBatch)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := env.close(); err != nil {
					t.Error(err)
				}
			}()
			if err := env.check(); err != nil {
				t.Fatal(err)
			}
			for _, batch := range env.batches[1:] {
				out := process(t, env.w, batch)
				if len(out.Dead) != 0 || len(out.Records) != len(batch) {
					t.Fatalf("%d records and %d dead letters", len(out.Records), len(out.Dead))
				}
			}
		})
	}
}

// TestStateBenchBadConfig checks that the module refuses a config it does
// not know, so a typo cannot turn a benchmark into another.
func TestStateBenchBadConfig(t *testing.T) {
	rt := newRuntime(t, nil)
	cfg := watConfig(t, "statebench")
	cfg.InitConfig = []byte(`{"op":"xyz"}`)
	if _, err := rt.Load(context.Background(), cfg); err == nil {
		t.Fatal("Load accepted an unknown op")
	}
}
