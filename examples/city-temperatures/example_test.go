package citytemperatures_test

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/weir-stream/weir/cmd/weir/weirtest"
)

// The services the example runs against, as pipeline.yaml names them.
const (
	mariaDSN   = "root@tcp(127.0.0.1:3306)/test?multiStatements=true"
	postgesDSN = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
)

// openDB opens and pings a database the example needs; the test fails (it
// does not skip) when the service is not running, since the machine runs
// both.
func openDB(t *testing.T, driver, dsn, service string) *sql.DB {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		t.Fatalf("%s is not reachable (%v): start it (see the README)", service, err)
	}
	return db
}

// execFile runs the statements of an SQL file of the example.
func execFile(t *testing.T, db *sql.DB, name string) {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	// Comment lines first (they may hold semicolons), then statements.
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "--") {
			lines = append(lines, l)
		}
	}
	var stmts []string
	for _, s := range strings.Split(strings.Join(lines, "\n"), ";") {
		if s := strings.TrimSpace(s); s != "" {
			stmts = append(stmts, s)
		}
	}
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %s: %v", name, s, err)
		}
	}
}

// cityMinute is one row of average_temperatures.
type cityMinute struct {
	City string
	End  time.Time
}

// reference computes the expected table by brute force: each reading of a
// device with a city, grouped by city and the minute it falls in, averaged.
func reference(t *testing.T, cities map[string]string) map[cityMinute]float64 {
	t.Helper()
	f, err := os.Open("measurements.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sum, n := map[cityMinute]float64{}, map[cityMinute]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m struct {
			DeviceID    *string   `json:"device_id"`
			Temperature float64   `json:"temperature"`
			Time        time.Time `json:"measurement_time"`
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		if m.DeviceID == nil {
			continue // dead-lettered
		}
		city, ok := cities[*m.DeviceID]
		if !ok {
			continue // no row: the inner join drops it
		}
		k := cityMinute{city, m.Time.UTC().Truncate(time.Minute).Add(time.Minute)}
		sum[k] += m.Temperature
		n[k]++
	}
	want := map[cityMinute]float64{}
	for k, s := range sum {
		want[k] = s / float64(n[k])
	}
	return want
}

// table reads average_temperatures.
func table(t *testing.T, db *sql.DB) map[cityMinute]float64 {
	t.Helper()
	rows, err := db.Query(`SELECT city, window_time, avg_temperature FROM average_temperatures`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[cityMinute]float64{}
	for rows.Next() {
		var k cityMinute
		var avg float64
		if err := rows.Scan(&k.City, &k.End, &avg); err != nil {
			t.Fatal(err)
		}
		k.End = k.End.UTC()
		if _, dup := got[k]; dup {
			t.Fatalf("two rows for %s at %s", k.City, k.End)
		}
		got[k] = avg
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

func describe(m map[cityMinute]float64) string {
	var lines []string
	for k, v := range m {
		lines = append(lines, fmt.Sprintf("%s %s %.6f", k.City, k.End.UTC().Format(time.DateTime), v))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TestCityTemperatures runs the example through the weir binary, against
// the machine's MariaDB (the device metadata) and PostgreSQL (the result
// table), and compares the table with a brute-force reference. It then
// runs the job again over the same topic: the upserts rewrite the same
// rows, so the table is unchanged, with no duplicates.
func TestCityTemperatures(t *testing.T) {
	maria := openDB(t, "mysql", mariaDSN, "MariaDB on 127.0.0.1:3306")
	pg := openDB(t, "pgx", postgesDSN, "PostgreSQL on 127.0.0.1:5432")
	execFile(t, maria, "device_metadata.sql")
	execFile(t, pg, "average_temperatures.sql")
	t.Cleanup(func() {
		maria.Exec(`DROP TABLE IF EXISTS device_metadata`)
		pg.Exec(`DROP TABLE IF EXISTS average_temperatures`)
	})

	cities := map[string]string{}
	rows, err := maria.Query(`SELECT device_id, city FROM device_metadata`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var d, c string
		if err := rows.Scan(&d, &c); err != nil {
			t.Fatal(err)
		}
		cities[d] = c
	}
	rows.Close()
	want := reference(t, cities)
	if len(want) != 12 {
		t.Fatalf("the reference has %d rows, want 12 (3 cities, 4 minutes)", len(want))
	}

	for run := 1; run <= 2; run++ {
		res := weirtest.Run(t, ".", "", "run", "--sequential", "to-kafka.yaml", "pipeline.yaml")
		if res.Code != 0 {
			t.Fatalf("run %d: weir run exited %d\nstderr:\n%s", run, res.Code, res.Stderr)
		}
		if !strings.Contains(res.Stderr, `lookup \"city\": field device_id not found`) &&
			!strings.Contains(res.Stderr, `lookup "city": field device_id not found`) {
			t.Errorf("run %d: the reading without a device_id is not dead-lettered\nstderr:\n%s", run, res.Stderr)
		}
		got := table(t, pg)
		ok := len(got) == len(want)
		for k, w := range want {
			if g, found := got[k]; !found || math.Abs(g-w) > 1e-9 {
				ok = false
			}
		}
		if !ok {
			t.Fatalf("run %d: average_temperatures:\n%s\nwant:\n%s\nstderr:\n%s", run, describe(got), describe(want), res.Stderr)
		}
	}
}

// TestCityTemperaturesBadSettings: a lookup query or a sink on a table that
// does not exist is an error before any record is read (the lookup's when
// the pipeline loads: exit 3; the sink's when it starts: exit 1), pointing
// at the operator or sink in pipeline.yaml. The settings
// come from the environment, as a deployment would override them.
func TestCityTemperaturesBadSettings(t *testing.T) {
	maria := openDB(t, "mysql", mariaDSN, "MariaDB on 127.0.0.1:3306")
	pg := openDB(t, "pgx", postgesDSN, "PostgreSQL on 127.0.0.1:5432")
	execFile(t, maria, "device_metadata.sql")
	t.Cleanup(func() { maria.Exec(`DROP TABLE IF EXISTS device_metadata`) })
	tests := []struct {
		name, env, value string
		code             int
		want             []string
	}{
		{name: "lookup table missing", env: "WEIR_OPERATORS_CITY_QUERY", value: "SELECT city FROM no_such_table WHERE device_id = ?",
			code: 3, want: []string{"pipeline.yaml:", `operators[0] "city"`, "no_such_table"}},
		{name: "sink table missing", env: "WEIR_SINKS_DASHBOARD_TABLE", value: "no_such_table",
			code: 1, want: []string{"pipeline.yaml:", `sinks[0] "dashboard"`, "no_such_table"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.env == "WEIR_SINKS_DASHBOARD_TABLE" {
				pg.Exec(`DROP TABLE IF EXISTS no_such_table`)
			}
			t.Setenv(tt.env, tt.value)
			res := weirtest.Run(t, ".", "", "run", "pipeline.yaml")
			if res.Code != tt.code {
				t.Fatalf("exit code %d, want %d\nstderr:\n%s", res.Code, tt.code, res.Stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(res.Stderr, w) {
					t.Fatalf("stderr does not say %q:\n%s", w, res.Stderr)
				}
			}
		})
	}
}
