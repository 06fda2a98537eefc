package tablejoin

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weir-stream/weir/host/internal/kafka"
	"github.com/weir-stream/weir/host/internal/record"
)

// BenchmarkTableJoin joins batches of 512 orders with a table of 100,000
// customers on the embedded broker: ns/op is per record.
func BenchmarkTableJoin(b *testing.B) {
	const customers = 100_000
	quiet := slog.New(slog.DiscardHandler)
	br, err := kafka.StartBroker(kafka.BrokerConfig{Topics: map[string]int32{"customers": 3}, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	cc := kafka.ClientConfig{Brokers: br.Addrs()}
	cl, err := kgo.NewClient(kgo.SeedBrokers(br.Addrs()...), kgo.DefaultProduceTopic("customers"))
	if err != nil {
		b.Fatal(err)
	}
	recs := make([]*kgo.Record, customers)
	for i := range recs {
		recs[i] = &kgo.Record{Key: fmt.Appendf(nil, "c%d", i), Value: fmt.Appendf(nil, `{"name":"customer %d","tier":"gold","since":2019}`, i)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		b.Fatal(err)
	}
	cl.Close()
	tbl, err := kafka.OpenTable(ctx, kafka.TableConfig{Client: cc, Topic: "customers", Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer tbl.Close()
	in := make([]record.Record, 512)
	for i := range in {
		in[i].Value = fmt.Appendf(nil, `{"order":%d,"customer":"c%d","amount":%d.5}`, i, (i*7919)%customers, i)
	}
	for _, tt := range []struct {
		name string
		path []string
	}{{"field", []string{"customer"}}} {
		b.Run(tt.name, func(b *testing.B) {
			op := New(Config{Name: "cust", Table: tbl, KeyPath: tt.path, Into: "cust"})
			var out record.Output
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				out.Reset()
				if err := op.Process(ctx, in, &out); err != nil {
					b.Fatal(err)
				}
				n += len(in)
				if len(out.Records) != len(in) {
					b.Fatalf("%d of %d joined", len(out.Records), len(in))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/record")
		})
	}
}
