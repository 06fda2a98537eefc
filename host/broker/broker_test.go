package broker_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/weir-stream/weir/host/broker"
)

// TestBrokerProduceConsume starts a broker, creates a topic on it, and
// writes records there and reads them back with the console tools.
func TestBrokerProduceConsume(t *testing.T) {
	if _, err := broker.Start(broker.Options{Topics: "in:x"}); err == nil || !strings.HasPrefix(err.Error(), "topics: ") {
		t.Fatalf("bad topics: %v, want a topics error", err)
	}
	b, err := broker.Start(broker.Options{Topics: "in:2"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	for range 2 { // a topic that exists is not an error
		if err := b.CreateTopic(ctx, "out", 3); err != nil {
			t.Fatal(err)
		}
	}
	client := broker.Client{Brokers: b.Addrs()}
	n, err := broker.Produce(ctx, broker.ProduceOptions{Client: client, Topic: "out", KeyField: "k"},
		strings.NewReader("{\"k\":\"a\",\"v\":1}\n{\"k\":\"b\",\"v\":2}\n"), "test")
	if err != nil || n != 2 {
		t.Fatalf("produced %d: %v", n, err)
	}
	var out bytes.Buffer
	n, err = broker.Consume(ctx, broker.ConsumeOptions{Client: client, Topic: "out", FromBeginning: true, Max: 2, Timeout: 10 * time.Second}, &out)
	if err != nil || n != 2 {
		t.Fatalf("consumed %d: %v\n%s", n, err, out.String())
	}
	if got := out.String(); !strings.Contains(got, `"v":1`) || !strings.Contains(got, `"v":2`) {
		t.Errorf("consumed %q, want both records", got)
	}
}

// TestRun: Run calls Ready with the addresses once it listens, and returns
// when its context ends.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan []string, 1)
	done := make(chan error, 1)
	go func() { done <- broker.Run(ctx, broker.Options{Ready: func(addrs []string) { ready <- addrs }}) }()
	if addrs := <-ready; len(addrs) != 1 || !strings.HasPrefix(addrs[0], "127.0.0.1:") {
		t.Errorf("addresses %v, want one on 127.0.0.1", addrs)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
