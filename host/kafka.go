package host

import (
	"context"
	"errors"

	"github.com/weir-stream/weir/host/internal/assembly"
	"github.com/weir-stream/weir/host/internal/kafka"
)

// CheckKafka checks, for a pipeline that names brokers, that every topic
// it writes (its Kafka sinks' and dead-letter output's) exists there, or
// that the brokers create topics on first use. It creates nothing. A run
// checks the same before it reads a record; weir validate calls it after
// Load.
func (p *Pipeline) CheckKafka(ctx context.Context) error {
	err := assembly.CheckKafka(ctx, p.cfg, p.opts.Logger)
	if ce := (*assembly.ConfigError)(nil); errors.As(err, &ce) {
		return &loadError{kind: ErrConfig, err: ce.Err}
	}
	return err
}

// consumerLag sums the Kafka sources' consumer lag, or is nil while it is
// unknown: a source holds no partition (it has not joined its group yet,
// or members of an earlier run still hold them), when 0 would read as
// caught up.
func consumerLag(sources []*kafka.Source) *int64 {
	var sum int64
	for _, s := range sources {
		n, known := s.LagKnown()
		if !known {
			return nil
		}
		sum += n
	}
	return &sum
}
