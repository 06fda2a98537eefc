package weirtest

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// fakeT records how a helper ended the test it was given: Skip and Fatal
// end the calling goroutine, as testing's do.
type fakeT struct {
	testing.TB
	skipped, failed string
}

func (f *fakeT) Helper() {}

func (f *fakeT) Skip(args ...any) { f.skipped = fmt.Sprint(args...); runtime.Goexit() }

func (f *fakeT) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// call runs fn with a fakeT on a goroutine of its own and returns how it
// ended.
func call(t *testing.T, fn func(testing.TB)) *fakeT {
	f := &fakeT{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	return f
}

func TestNeedToolchain(t *testing.T) {
	// No clang on PATH. The check is made once per process, so this
	// package's tests never ask for C with clang installed.
	t.Setenv("PATH", t.TempDir())
	for _, tc := range []struct {
		lang, require   string
		skipped, failed string // what the message holds; "" for no skip, or no failure
	}{
		{lang: "c", skipped: "building C plugins needs clang on PATH, which is missing: run scripts/install-toolchains.sh"},
		{lang: "c", require: "0", skipped: "clang on PATH"},
		{lang: "c", require: "1", failed: "clang on PATH, which is missing: run scripts/install-toolchains.sh (WEIR_REQUIRE_TOOLCHAINS=1"},
		{lang: "go", require: "1"},
		{lang: "wat"},
		{lang: "cobol", failed: `unknown plugin language "cobol"`},
	} {
		t.Run(tc.lang+"/"+tc.require, func(t *testing.T) {
			t.Setenv(RequireToolchains, tc.require)
			f := call(t, func(tb testing.TB) { NeedToolchain(tb, tc.lang) })
			for _, c := range []struct{ what, got, want string }{{"skipped", f.skipped, tc.skipped}, {"failed", f.failed, tc.failed}} {
				if (c.want == "") != (c.got == "") || !strings.Contains(c.got, c.want) {
					t.Errorf("%s with %q; want %q", c.what, c.got, c.want)
				}
			}
		})
	}
}

func TestPollUntil(t *testing.T) {
	calls := 0
	f := call(t, func(tb testing.TB) {
		PollUntil(tb, 10*time.Second, "the third call", func() bool { calls++; return calls == 3 })
	})
	if f.failed != "" || calls != 3 {
		t.Errorf("PollUntil failed with %q after %d calls; want it to return at the third", f.failed, calls)
	}
	f = call(t, func(tb testing.TB) {
		PollUntil(tb, 50*time.Millisecond, "what never happens", func() bool { return false })
	})
	if want := "timed out after 50ms waiting for what never happens"; f.failed != want {
		t.Errorf("PollUntil failed with %q; want %q", f.failed, want)
	}
}

// TestTail checks what a failed test shows of an instance's log: its
// last lines above debug, in order.
func TestTail(t *testing.T) {
	for _, tc := range []struct {
		name, log, want string
		n               int
	}{
		{name: "debug dropped", log: "level=INFO a\nlevel=DEBUG b\nlevel=WARN c\n", n: 5, want: "level=INFO a\nlevel=WARN c"},
		{name: "the last n", log: "level=INFO a\nlevel=INFO b\nweir: failed\n", n: 2, want: "level=INFO b\nweir: failed"},
		{name: "only debug", log: "level=DEBUG a\n", n: 3, want: ""},
		{name: "empty", log: "", n: 3, want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tail(tc.log, tc.n); got != tc.want {
				t.Errorf("tail = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestLast checks the other part a failed test shows of an instance's
// log: its last lines of any level, each cut to 300 bytes.
func TestLast(t *testing.T) {
	long := strings.Repeat("x", 400)
	for _, tc := range []struct {
		name, log, want string
		n               int
	}{
		{name: "debug kept", log: "level=INFO a\nlevel=DEBUG b\nlevel=DEBUG c\n", n: 2, want: "level=DEBUG b\nlevel=DEBUG c"},
		{name: "long lines cut", log: long + "\n", n: 1, want: long[:300] + "…"},
		{name: "empty", log: "", n: 3, want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := last(tc.log, tc.n); got != tc.want {
				t.Errorf("last = %q, want %q", got, tc.want)
			}
		})
	}
}
