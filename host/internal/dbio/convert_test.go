package dbio

import (
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weir-stream/weir/abi/wjson"
)

func TestPlaceholders(t *testing.T) {
	tests := []struct {
		name     string
		driver   string
		query    string
		rewrite  string // for PostgreSQL; MySQL's query is sent as it is
		nmarkers int
	}{
		{"one", Postgres, "SELECT a FROM t WHERE id = ?", "SELECT a FROM t WHERE id = $1", 1},
		{"several", Postgres, "SELECT ?, ? , (?)", "SELECT $1, $2 , ($3)", 3},
		{"single quotes", Postgres, "SELECT '?', 'it''s ?' WHERE x = ?", "SELECT '?', 'it''s ?' WHERE x = $1", 1},
		{"backslash is plain in a postgres string", Postgres, `SELECT 'a\' WHERE x = ?`, `SELECT 'a\' WHERE x = $1`, 1},
		{"E string escapes", Postgres, `SELECT E'a\'?' WHERE x = ?`, `SELECT E'a\'?' WHERE x = $1`, 1},
		{"identifier ending in e is no E string", Postgres, `SELECT some'a\' WHERE x = ?`, `SELECT some'a\' WHERE x = $1`, 1},
		{"double-quoted identifier", Postgres, `SELECT "wh?y" FROM "t""?" WHERE x = ?`, `SELECT "wh?y" FROM "t""?" WHERE x = $1`, 1},
		{"line comment", Postgres, "SELECT a -- what?\nWHERE x = ? --?", "SELECT a -- what?\nWHERE x = $1 --?", 1},
		{"block comment nests", Postgres, "SELECT /* a /* ? */ ? */ ?", "SELECT /* a /* ? */ ? */ $1", 1},
		{"dollar quotes", Postgres, "SELECT $$?$$, $tag$ ? $$ ? $tag$, ?", "SELECT $$?$$, $tag$ ? $$ ? $tag$, $1", 1},
		{"positional dollar is no quote nor marker", Postgres, "SELECT $1, ?", "SELECT $1, $1", 1},
		{"dollar inside an identifier", Postgres, "SELECT a$b$ ?", "SELECT a$b$ $1", 1},
		{"unterminated string", Postgres, "SELECT ? 'abc ?", "SELECT $1 'abc ?", 1},
		{"unterminated comment", Postgres, "SELECT ? /* ?", "SELECT $1 /* ?", 1},
		{"none", Postgres, "SELECT 1", "SELECT 1", 0},
		{"mysql backslash escape", MySQL, `SELECT 'a\'?' WHERE x = ?`, "", 1},
		{"mysql double-quoted string", MySQL, `SELECT "a\"?" WHERE x = ?`, "", 1},
		{"mysql backquotes", MySQL, "SELECT `?` WHERE x = ?", "", 1},
		{"mysql hash comment", MySQL, "SELECT a # ?\nWHERE x = ?", "", 1},
		{"mysql -- needs a space", MySQL, "SELECT 1--? \n, ? -- ?", "", 2},
		{"mysql block comment does not nest", MySQL, "SELECT /* /* */ ? */", "", 1},
		{"mysql has no dollar quotes", MySQL, "SELECT $$?$$", "", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			at := placeholders(tt.driver, tt.query)
			if len(at) != tt.nmarkers {
				t.Errorf("placeholders(%q) = %v, want %d", tt.query, at, tt.nmarkers)
			}
			want := tt.rewrite
			if tt.driver == MySQL {
				want = tt.query
			}
			if got := rewritePlaceholders(tt.driver, tt.query, at); got != want {
				t.Errorf("rewrite:\n got %q\nwant %q", got, want)
			}
		})
	}
}

func TestParam(t *testing.T) {
	tests := []struct {
		name string
		json string
		want any
		err  string
	}{
		{"string", `"a\u00e9\n"`, "aé\n", ""},
		{"integer", `-42`, int64(-42), ""},
		{"int64 max", `9223372036854775807`, int64(math.MaxInt64), ""},
		{"beyond int64", `9223372036854775808`, 9223372036854775808.0, ""},
		{"fraction", `2.5`, 2.5, ""},
		{"exponent", `1e3`, 1000.0, ""},
		{"integral with point", `4.0`, 4.0, ""},
		{"out of range", `1e400`, nil, "number 1e400 is out of range"},
		{"true", `true`, true, ""},
		{"false", `false`, false, ""},
		{"null", `null`, nil, ""},
		{"object", `{"a": [1, 2]}`, `{"a": [1, 2]}`, ""},
		{"array", `[ ]`, `[ ]`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := wjson.Parse([]byte(tt.json))
			if err != nil {
				t.Fatal(err)
			}
			got, err := param(v)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Errorf("error %v, want %s", err, tt.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("param(%s) = %#v, %v; want %#v", tt.json, got, err, tt.want)
			}
		})
	}
}

func TestAppendColumn(t *testing.T) {
	tests := []struct {
		name string
		kind colKind
		v    any
		want string
	}{
		{"nil", colPlain, nil, "null"},
		{"string", colPlain, "a\"b\x00", `"a\"b\u0000"`},
		{"bytes", colPlain, []byte("x"), `"x"`},
		{"int64", colPlain, int64(-3), "-3"},
		{"uint64", colPlain, uint64(math.MaxUint64), "18446744073709551615"},
		{"float", colPlain, 0.1, "0.1"},
		{"float exponent", colPlain, 1e21, "1e+21"},
		{"float integral", colPlain, 52.0, "52"},
		{"float32", colPlain, float32(0.1), "0.1"},
		{"NaN", colPlain, math.NaN(), "null"},
		{"Inf", colPlain, math.Inf(-1), "null"},
		{"bool", colPlain, true, "true"},
		{"time", colPlain, time.Date(2024, 5, 6, 9, 8, 9, 5e8, time.FixedZone("x", 2*3600)), `"2024-05-06T07:08:09.5Z"`},
		{"decimal", colNumeric, []byte("-12.50"), "-12.50"},
		{"decimal NaN", colNumeric, "NaN", "null"},
		{"not a number", colNumeric, "1 day", `"1 day"`},
		{"json", colJSON, []byte(`{"a": 1}`), `{"a": 1}`},
		{"bad json", colJSON, "{", `"{"`},
		{"other", colPlain, []int{1}, `"[1]"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(appendColumn(nil, tt.kind, tt.v)); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

// FuzzPlaceholders checks that every marker found is a '?', that the
// PostgreSQL rewrite changes exactly the markers, and that markers are
// found alike in a query and in the query with text appended.
func FuzzPlaceholders(f *testing.F) {
	for _, s := range []string{
		"SELECT a FROM t WHERE id = ?", "SELECT '?', E'\\'?', \"?\" -- ?\n ?", "/* /* ? */ */ ?", "$tag$ ? $tag$ ?",
		"$$", "'", "`?` # ?\n?", "a$b$?", "e'\\'?'", "--", "/*", "$1?", "?$1$?",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		for _, d := range []string{MySQL, Postgres} {
			at := placeholders(d, q)
			for i, p := range at {
				if q[p] != '?' || i > 0 && p <= at[i-1] {
					t.Fatalf("%s: markers %v in %q", d, at, q)
				}
			}
			out := rewritePlaceholders(d, q, at)
			if d == MySQL {
				if out != q {
					t.Fatalf("mysql query changed: %q", out)
				}
				continue
			}
			// The rewrite replaces the markers, and only them, by $1, $2, ...
			var want strings.Builder
			k := 0
			for i := range len(q) {
				if k < len(at) && at[k] == i {
					k++
					want.WriteString("$" + strconv.Itoa(k))
					continue
				}
				want.WriteByte(q[i])
			}
			if out != want.String() {
				t.Fatalf("rewrite of %q is %q", q, out)
			}
			if n := strings.Count(q, "?"); len(at) > n {
				t.Fatalf("%d markers, %d question marks", len(at), n)
			}
			// Appending text never moves or removes earlier markers.
			more := placeholders(d, q+" ?")
			if len(more) < len(at) || !slices.Equal(more[:len(at)], at) {
				t.Fatalf("markers %v of %q, but %v with text appended", at, q, more)
			}
		}
	})
}
