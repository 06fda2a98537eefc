package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AutoCreateConfig is the broker setting that makes Kafka create a topic
// the first time a client asks for it (on by default in Kafka).
const AutoCreateConfig = "auto.create.topics.enable"

// topicCheckTimeout bounds MissingTopics.
const topicCheckTimeout = 15 * time.Second

// MissingTopics returns the topics, of those a pipeline produces to, that
// do not exist on the brokers and that the brokers will not create on
// first use, so that a run can fail before it reads a record. A topic the
// brokers create is fine: with create, it is created now (a metadata
// request that allows auto-creation, as a producer's first request does),
// so that a client that does not ask for auto-creation (a transaction's)
// finds it; without create (weir validate), nothing is created when the
// brokers say they auto-create. Whether they do is read from the first
// broker's auto.create.topics.enable or, when that cannot be read, found
// by asking for the topic with auto-creation allowed.
func MissingTopics(ctx context.Context, cc ClientConfig, topics []string, create bool) ([]string, error) {
	opts, err := cc.Opts()
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, topicCheckTimeout)
	defer cancel()
	adm := kadm.NewClient(cl)
	missing, err := absentTopics(ctx, adm, topics)
	if err != nil || len(missing) == 0 {
		return nil, err
	}
	auto, known := brokersAutoCreate(ctx, adm)
	switch {
	case known && !auto:
		return missing, nil
	case known && !create:
		return nil, nil
	}
	return autoCreateTopics(ctx, cl, missing)
}

// absentTopics lists topics and returns those the brokers do not have.
func absentTopics(ctx context.Context, adm *kadm.Client, topics []string) ([]string, error) {
	topics = slices.Compact(slices.Sorted(slices.Values(topics)))
	details, err := adm.ListTopics(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("listing topics: %w", err)
	}
	var missing []string
	for _, t := range topics {
		if d, ok := details[t]; !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
			missing = append(missing, t)
		}
	}
	return missing, nil
}

// brokersAutoCreate reads auto.create.topics.enable from the first broker;
// known is false when it cannot (no permission, or a broker that does not
// report it).
func brokersAutoCreate(ctx context.Context, adm *kadm.Client) (auto, known bool) {
	meta, err := adm.BrokerMetadata(ctx)
	if err != nil || len(meta.Brokers) == 0 {
		return false, false
	}
	rcs, err := adm.DescribeBrokerConfigs(ctx, meta.Brokers[0].NodeID)
	if err != nil {
		return false, false
	}
	for _, rc := range rcs {
		for _, c := range rc.Configs {
			if c.Key == AutoCreateConfig && c.Value != nil && rc.Err == nil {
				return strings.EqualFold(*c.Value, "true"), true
			}
		}
	}
	return false, false
}

// autoCreateTopics asks for the topics' metadata allowing auto-creation,
// and returns those the brokers still do not know.
func autoCreateTopics(ctx context.Context, cl *kgo.Client, topics []string) ([]string, error) {
	resp, err := topicsMetadata(ctx, cl, topics, true)
	if err != nil {
		return nil, fmt.Errorf("asking the brokers for topics %s: %w", strings.Join(topics, ", "), err)
	}
	var missing []string
	for _, rt := range resp.Topics {
		if rt.Topic != nil && kerr.ErrorForCode(rt.ErrorCode) == kerr.UnknownTopicOrPartition {
			missing = append(missing, *rt.Topic)
		}
	}
	slices.Sort(missing)
	return missing, nil
}

// topicsMetadata asks the brokers for the topics' metadata, allowing
// them to create missing ones when autoCreate says so. It does not
// answer from the client's metadata cache, as kadm does (for kgo's
// MetadataMinAge, 5 s): a topic made a moment ago shows.
func topicsMetadata(ctx context.Context, cl *kgo.Client, topics []string, autoCreate bool) (*kmsg.MetadataResponse, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = autoCreate
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	return req.RequestWith(ctx, cl)
}
