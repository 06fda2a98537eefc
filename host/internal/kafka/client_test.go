package kafka

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// TestClientSASL produces and consumes through a kfake cluster that requires
// SASL, with each mechanism, and checks that wrong credentials fail.
func TestClientSASL(t *testing.T) {
	if testing.Short() {
		t.Skip("a handshake per mechanism, nothing concurrent; the full pass runs it")
	}
	tests := []struct {
		name      string
		mechanism string
	}{
		{name: "plain", mechanism: SASLPlain},
		{name: "scram-sha-256", mechanism: SASLScramSHA256},
		{name: "scram-sha-512", mechanism: SASLScramSHA512},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(),
				kfake.Superuser(tt.mechanism, "alice", "s3cret"), kfake.SeedTopics(1, "t"))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			good := ClientConfig{Brokers: c.ListenAddrs(), SASL: SASLConfig{Mechanism: tt.mechanism, User: "alice", Password: "s3cret"}}
			if n, err := Produce(ctx, ProduceConfig{Client: good, Topic: "t"}, strings.NewReader("{\"a\":1}\n"), "test"); err != nil || n != 1 {
				t.Fatalf("Produce = %d, %v", n, err)
			}
			var out bytes.Buffer
			if n, err := Consume(ctx, ConsumeConfig{Client: good, Topic: "t", FromBeginning: true, Max: 1}, &out); err != nil || n != 1 || out.String() != "{\"a\":1}\n" {
				t.Fatalf("Consume = %d, %v, %q", n, err, out.String())
			}
			bad := good
			bad.SASL.Password = "wrong"
			shortCtx, cancelShort := context.WithTimeout(ctx, 2*time.Second)
			defer cancelShort()
			if _, err := Produce(shortCtx, ProduceConfig{Client: bad, Topic: "t"}, strings.NewReader("{\"a\":2}\n"), "test"); err == nil {
				t.Fatal("Produce with a wrong password succeeded")
			}
		})
	}
}

func TestClientConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  ClientConfig
		want string
	}{
		{name: "no brokers", cfg: ClientConfig{}, want: "no brokers"},
		{name: "unknown mechanism", cfg: ClientConfig{Brokers: []string{"x:1"}, SASL: SASLConfig{Mechanism: "GSSAPI"}}, want: "unknown SASL mechanism"},
		{name: "cert without key", cfg: ClientConfig{Brokers: []string{"x:1"}, TLS: TLSConfig{Enabled: true, CertFile: "c.pem"}}, want: "both a certificate file and a key file"},
		{name: "missing CA", cfg: ClientConfig{Brokers: []string{"x:1"}, TLS: TLSConfig{Enabled: true, CAFile: "/nonexistent/ca.pem"}}, want: "TLS CA file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := tt.cfg.Opts(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Opts() error = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}
