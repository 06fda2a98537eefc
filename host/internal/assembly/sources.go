package assembly

import (
	"context"

	"github.com/weir-stream/weir/host/internal/config"
	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/kafka"
	"github.com/weir-stream/weir/host/internal/nexmark"
)

// sources opens the pipeline's sources; a Kafka source may bring the
// run's exactly-once transaction. The Kafka sources of one consumer
// group are read through the client of the first of them (kafka.View):
// one member of the group per instance.
func (b *builder) sources(context.Context) error {
	for i := range b.Config.Sources {
		s := &b.Config.Sources[i]
		switch {
		case s.Type != config.SourceKafka:
			b.run.Engine.Sources = append(b.run.Engine.Sources, b.source(s))
		case b.views[i] != nil:
			b.run.Engine.Sources = append(b.run.Engine.Sources, b.views[i])
		default:
			if err := b.kafkaGroup(i); err != nil {
				return err
			}
		}
	}
	return nil
}

// kafkaGroup opens the Kafka source of config source i, which reads the
// topics of the later sources of its group too, and keeps their Views.
func (b *builder) kafkaGroup(i int) error {
	s := &b.Config.Sources[i]
	others := groupOthers(b.Config, i)
	var src *kafka.Source
	var err error
	if b.byTask {
		src, err = b.taskSource(s, others)
	} else {
		src, err = b.kafkaSource(s, others)
	}
	if err != nil {
		return err
	}
	if b.byTask {
		b.run.Engine.Sources = append(b.run.Engine.Sources, keptSource{src})
	} else {
		b.run.Engine.Sources = append(b.run.Engine.Sources, src)
	}
	if b.views == nil {
		b.views = map[int]*kafka.View{}
	}
	for j, v := range src.Views() {
		b.views[others[j]] = v
	}
	b.run.KafkaSources = append(b.run.KafkaSources, src)
	b.kafkaRun = true
	if t := src.Txn(); t != nil {
		b.txn = t
	}
	return nil
}

// groupOthers returns the indexes of the Kafka sources after source i
// in its consumer group.
func groupOthers(cfg *config.Pipeline, i int) []int {
	var out []int
	for j := i + 1; j < len(cfg.Sources); j++ {
		if s := &cfg.Sources[j]; s.Type == config.SourceKafka && s.Group == cfg.Sources[i].Group {
			out = append(out, j)
		}
	}
	return out
}

// source opens the non-Kafka source s.
func (b *builder) source(s *config.Source) engine.Source {
	switch s.Type {
	case config.SourceStdin:
		return engine.NewReaderSource(s.Name, "standard input", b.Stdin, sourceFormat(s.Format))
	case config.SourceGenerator:
		gc := engine.GeneratorConfig{Count: s.Count, Rate: s.Rate, Seed: uint64(s.Seed), Key: s.Key, Linger: b.Config.Engine.BatchLinger}
		for _, f := range s.Fields {
			gf := engine.GenField{Name: f.Name, Kind: genKinds[f.Kind], Start: f.Start, Min: f.Min, Max: f.Max,
				MinInt: f.MinInt, MaxInt: f.MaxInt, Decimals: f.Decimals, Length: f.Length, Values: f.Values, Value: f.Value}
			if f.End != nil {
				gf.End, gf.Bounded = *f.End, true
			}
			gc.Fields = append(gc.Fields, gf)
		}
		return engine.NewGenerator(s.Name, gc)
	case config.SourceNexmark:
		nc := nexmark.SourceConfig{Count: s.Count, Rate: s.Rate, Linger: b.Config.Engine.BatchLinger, WallClock: s.EventTime == nil,
			Config: nexmark.Config{FirstEventRate: s.Nexmark.FirstEventRate, BaseTime: s.Nexmark.BaseTime, Seed: s.Seed}}
		for _, k := range s.Nexmark.Kinds {
			nc.Kinds |= map[string]nexmark.Kind{config.NexmarkPerson: nexmark.KindPerson, config.NexmarkAuction: nexmark.KindAuction, config.NexmarkBid: nexmark.KindBid}[k]
		}
		return nexmark.NewSource(s.Name, nc)
	default:
		return engine.NewFileSource(s.Name, s.Path, sourceFormat(s.Format))
	}
}

func sourceFormat(f config.SourceFormat) engine.Format {
	switch f {
	case config.FormatJSONL:
		return engine.FormatJSONLines
	case config.FormatJSONArray:
		return engine.FormatJSONArray
	case config.FormatLines:
		return engine.FormatLines
	}
	return engine.FormatAuto
}

// genKinds maps the config's generator field kinds to the engine's.
var genKinds = map[config.GenKind]engine.GenKind{
	config.GenSequence: engine.GenSequence, config.GenRandomInt: engine.GenRandomInt,
	config.GenRandomFloat: engine.GenRandomFloat, config.GenRandomChoice: engine.GenRandomChoice,
	config.GenRandomString: engine.GenRandomString, config.GenRandomBool: engine.GenRandomBool,
	config.GenConstant: engine.GenConstant, config.GenTimestamp: engine.GenTimestamp,
}

var eventTimeFormats = map[string]engine.TimeFormat{
	"epoch_ms": engine.TimeEpochMillis, "epoch_s": engine.TimeEpochSeconds, "rfc3339": engine.TimeRFC3339, "sql": engine.TimeSQL,
}

// ProcessingTime reports whether the pipeline runs on processing time: no
// source says where event time comes from. Windows then assign records by
// when they are processed, whatever their timestamps (a Kafka record's is
// when it was written).
func ProcessingTime(cfg *config.Pipeline) bool {
	for _, s := range cfg.Sources {
		if s.EventTime != nil {
			return false
		}
	}
	return true
}

// eventTimes returns the engine's event-time settings, per source.
func eventTimes(cfg *config.Pipeline) []*engine.EventTime {
	ets := make([]*engine.EventTime, len(cfg.Sources))
	for i, s := range cfg.Sources {
		if et := s.EventTime; et != nil {
			ets[i] = &engine.EventTime{Field: et.Path, Format: eventTimeFormats[et.Format],
				MaxOutOfOrderness: et.MaxOutOfOrderness, IdleTimeout: et.IdleTimeout, IdleAdvance: et.IdleAdvance}
		}
	}
	return ets
}
