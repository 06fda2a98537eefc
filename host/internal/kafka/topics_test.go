package kafka

import (
	"context"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
)

// TestMissingTopics: a topic a pipeline writes is missing only when the
// brokers lack it and will not create it: they say so
// (auto.create.topics.enable=false), or, when they do not say, asking for
// it with auto-creation allowed does not create it. With create, a topic
// the brokers create is created; without, nothing is when they say they
// would.
func TestMissingTopics(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		auto        bool // the brokers create topics on first use
		unreported  bool // a plain kfake cluster, which does not report the setting
		create      bool
		wantMissing []string
		wantCreated bool
	}{
		{"auto-creation off", false, false, true, []string{"fresh"}, false},
		{"auto-creation on, validating", true, false, false, nil, false},
		{"auto-creation on, starting", true, false, true, nil, true},
		{"unreported, off", false, true, false, []string{"fresh"}, false},
		{"unreported, on", true, true, false, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cc := mtCluster(t, tc.auto, tc.unreported)
			missing, err := MissingTopics(context.Background(), cc, []string{"fresh", "there", "there"}, tc.create)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(missing, tc.wantMissing) {
				t.Errorf("missing %q, want %q", missing, tc.wantMissing)
			}
			cl := srcClient(t, cc)
			defer cl.Close()
			details, err := kadm.NewClient(cl).ListTopics(context.Background(), "fresh")
			if err != nil {
				t.Fatal(err)
			}
			if created := details.Has("fresh") && details["fresh"].Err == nil; created != tc.wantCreated {
				t.Errorf("fresh created: %v, want %v", created, tc.wantCreated)
			}
		})
	}
}

// mtCluster starts a broker holding the topic "there": weir's own, which
// reports auto.create.topics.enable, or a plain kfake cluster, which does
// not.
func mtCluster(t *testing.T, auto, unreported bool) ClientConfig {
	t.Helper()
	if !unreported {
		b, err := StartBroker(BrokerConfig{Topics: map[string]int32{"there": 1}, Logger: srcQuiet(), AutoCreateTopics: auto})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.Close)
		return ClientConfig{Brokers: b.Addrs()}
	}
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(1, "there")}
	if auto {
		opts = append(opts, kfake.AllowAutoTopicCreation())
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return ClientConfig{Brokers: c.ListenAddrs()}
}
