package state

import (
	"crypto/sha256"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dirDigest hashes every file's name and content under dir.
func dirDigest(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		h.Write([]byte(path))
		h.Write(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(h.Sum(nil))
}

func viewAll(t *testing.T, v *BadgerView) string {
	t.Helper()
	var sb strings.Builder
	if err := v.Scan(nil, func(k, val []byte) error {
		sb.WriteString(string(k) + "=" + string(val) + ";")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return sb.String()
}

// TestBadgerView checks that the view shows what the store's next open
// would, writes nothing, and refuses a directory in use.
func TestBadgerView(t *testing.T) {
	tests := []struct {
		name string
		// build writes a store in dir and closes it.
		build         func(t *testing.T, dir string)
		want          string
		wantCommitted string // meta; "" for none
		wantPrepared  bool
	}{
		{
			name: "never checkpointed",
			build: func(t *testing.T, dir string) {
				b, err := OpenBadger(testBadgerOptions(dir, 0))
				if err != nil {
					t.Fatal(err)
				}
				b.Apply([]Mutation{set("a", "1"), set("b", "2")})
				if err := b.Close(); err != nil {
					t.Fatal(err)
				}
			},
			want: "a=1;b=2;",
		},
		{
			name: "writes after the checkpoint are not shown",
			build: func(t *testing.T, dir string) {
				o := testBadgerOptions(dir, -1) // no cache: Apply writes badger
				o.Checkpointed = true
				b, err := OpenBadger(o)
				if err != nil {
					t.Fatal(err)
				}
				b.Apply([]Mutation{set("a", "1"), set("b", "2")})
				if err := b.Checkpoint([]byte(`{"epoch":1}`)); err != nil {
					t.Fatal(err)
				}
				b.Apply([]Mutation{set("a", "changed"), del("b"), set("c", "3")})
				if err := b.Close(); err != nil {
					t.Fatal(err)
				}
			},
			want:          "a=1;b=2;",
			wantCommitted: `{"epoch":1}`,
		},
		{
			name: "a prepared checkpoint is rolled back",
			build: func(t *testing.T, dir string) {
				o := testBadgerOptions(dir, -1)
				o.Checkpointed = true
				b, err := OpenBadger(o)
				if err != nil {
					t.Fatal(err)
				}
				b.Apply([]Mutation{set("a", "1")})
				if err := b.Checkpoint([]byte(`{"epoch":1}`)); err != nil {
					t.Fatal(err)
				}
				b.Apply([]Mutation{set("a", "2")})
				if err := b.Prepare([]byte(`{"epoch":2}`)); err != nil {
					t.Fatal(err)
				}
				if err := b.Close(); err != nil {
					t.Fatal(err)
				}
			},
			want:          "a=1;",
			wantCommitted: `{"epoch":1}`,
			wantPrepared:  true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.build(t, dir)
			before := dirDigest(t, dir)
			v, err := OpenBadgerView(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := viewAll(t, v); got != tt.want {
				t.Errorf("scan = %q, want %q", got, tt.want)
			}
			var keys []string
			v.Keys([]byte("a"), func(k []byte) error { keys = append(keys, string(k)); return nil })
			if len(keys) != 1 || keys[0] != "a" {
				t.Errorf("Keys(a) = %q", keys)
			}
			cp, ok := v.Committed()
			if got := string(cp.Meta); ok != (tt.wantCommitted != "") || got != tt.wantCommitted {
				t.Errorf("Committed = %q, %v; want %q", got, ok, tt.wantCommitted)
			}
			if _, ok := v.Prepared(); ok != tt.wantPrepared {
				t.Errorf("Prepared ok = %v, want %v", ok, tt.wantPrepared)
			}
			if err := v.Close(); err != nil {
				t.Fatal(err)
			}
			if dirDigest(t, dir) != before {
				t.Error("the view changed the directory")
			}
		})
	}
}

func TestBadgerViewRefuses(t *testing.T) {
	t.Run("locked", func(t *testing.T) {
		dir := t.TempDir()
		b := openTestBadger(t, dir, 0)
		_ = b
		_, err := OpenBadgerView(dir, nil)
		if !errors.Is(err, ErrLocked) {
			t.Fatalf("err = %v, want ErrLocked", err)
		}
	})
	t.Run("no database", func(t *testing.T) {
		dir := t.TempDir()
		_, err := OpenBadgerView(filepath.Join(dir, "absent"), nil)
		if !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("err = %v, want ErrNotExist", err)
		}
		if _, err := os.Stat(filepath.Join(dir, "absent")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatal("the view created the directory")
		}
	})
}
