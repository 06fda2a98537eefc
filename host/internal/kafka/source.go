package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-stream/weir/abi/wjson"
	"github.com/weir-stream/weir/host/internal/engine"
	"github.com/weir-stream/weir/host/internal/record"
)

// StartPosition is where a Kafka source begins reading a partition for which
// its consumer group has no committed offset. A partition with a committed
// offset always resumes there, whatever the StartPosition. (A committed
// offset that is no longer in the log, because retention deleted it, resumes
// at the oldest record.) It is a plain value.
type StartPosition int

const (
	// StartEarliest begins at the oldest record still in the partition.
	// It is the default.
	StartEarliest StartPosition = iota
	// StartLatest begins at the end of the partition: only records
	// produced after the group first joined are read.
	StartLatest
	// StartTimestamp begins at the first record whose timestamp is at or
	// after SourceConfig.StartTimestamp (milliseconds since the Unix
	// epoch), or at the end of the partition if there is none.
	StartTimestamp
	// StartCommitted resumes from the group's committed offsets and, for a
	// partition without one, begins at the oldest record: it behaves
	// exactly as StartEarliest, and exists so that a configuration can say
	// "resume" explicitly.
	StartCommitted
)

// String returns the name ParseStartPosition accepts.
func (p StartPosition) String() string {
	switch p {
	case StartEarliest:
		return "earliest"
	case StartLatest:
		return "latest"
	case StartTimestamp:
		return "timestamp"
	case StartCommitted:
		return "committed"
	}
	return "StartPosition(" + strconv.Itoa(int(p)) + ")"
}

// ParseStartPosition parses "earliest", "latest", "committed", a timestamp
// in milliseconds since the Unix epoch, or an RFC 3339 time. For the last
// two it returns StartTimestamp and the time in milliseconds.
func ParseStartPosition(s string) (StartPosition, int64, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "earliest":
		return StartEarliest, 0, nil
	case "latest":
		return StartLatest, 0, nil
	case "committed":
		return StartCommitted, 0, nil
	}
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil && ms >= 0 {
		return StartTimestamp, ms, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return StartTimestamp, t.UnixMilli(), nil
	}
	return 0, 0, fmt.Errorf("kafka: start position %q: want earliest, latest, committed, milliseconds since the epoch or an RFC 3339 time", s)
}

// Format is how a Kafka source decodes record values. It is a plain value.
type Format int

const (
	// FormatJSON requires each value to be one JSON document; any other
	// value goes to the dead-letter output.
	FormatJSON Format = iota
	// FormatRaw passes values through as bytes, unchecked.
	FormatRaw
)

// SourceConfig configures a Kafka source. It is a plain value; NewSource
// copies what it needs.
type SourceConfig struct {
	// Name is the stage name, used in origins, dead letters and logs.
	Name   string
	Client ClientConfig
	// Topics lists the topics to consume; or set TopicRegex instead. A
	// topic that does not exist yet is waited for (and logged once).
	Topics []string
	// TopicRegex consumes every topic whose name matches, in Go syntax
	// (unanchored: "orders" also matches "orders-eu"). New matching topics
	// are picked up as they appear.
	TopicRegex string
	// Group is the consumer group id; required. Offsets are committed to
	// this group.
	Group string
	// Start is where to begin a partition the group has no committed
	// offset for.
	Start StartPosition
	// StartTimestamp is the time, in milliseconds since the Unix epoch,
	// for Start == StartTimestamp.
	StartTimestamp int64
	// Format is how values are decoded.
	Format Format
	// Logger receives warnings and errors; nil means slog.Default().
	Logger *slog.Logger

	// CommitInterval is how often completed offsets are committed;
	// default 1s. Offsets are also committed on revocation and on Close.
	CommitInterval time.Duration
	// RevokeTimeout bounds how long a rebalance that takes partitions away
	// waits for the pipeline to finish their in-flight records before
	// committing; default 5s. It must stay well below the group's
	// rebalance timeout (60s).
	RevokeTimeout time.Duration
	// MaxPollRecords caps the records taken from the client per poll, and
	// so the records handed to the pipeline between two chances to
	// rebalance; default 4096.
	MaxPollRecords int
	// FetchMaxBytes caps the bytes one fetch response may hold (before
	// decompression); default 8 MiB. See Source for how memory is bounded.
	FetchMaxBytes int32

	// StopAtEnd makes the source bounded, as Flink's
	// scan.bounded.mode=latest-offset: Run returns once every partition of
	// the topics has been read up to the end offset it had when Run began.
	// It is meant for one pipeline instance (demos, tests, backfills): with
	// several members in the group, each waits for partitions it may never
	// be assigned.
	StopAtEnd bool
	// Checkpointed makes the pipeline's checkpoints own the offsets: the
	// source commits the group's offsets only when a checkpoint completes
	// (engine.CheckpointListener), not on an interval, on revocation or on
	// Close, and resumes from a checkpoint's offsets (engine.Snapshotter),
	// so that state and input positions always agree.
	Checkpointed bool
	// InstanceID, when set, makes the source a static member of its group
	// (KIP-345): restarted with the same id, it gets its partitions back
	// without waiting for the old member's session to time out.
	InstanceID string
	// SessionTimeout is how long the group waits for a member that stopped
	// heartbeating (a crashed instance, or a static member that stopped)
	// before it gives its partitions to others; 0 means the client's
	// default, 45s.
	SessionTimeout time.Duration
	// PositionsFromGroup makes a Checkpointed source resume from the
	// group's offsets rather than from a restored checkpoint's, for a
	// pipeline without keyed state, whose instances may share the group:
	// a checkpoint of one instance then says nothing of partitions
	// another has read since. Each checkpoint commits the offsets, so they
	// lag a checkpoint only after a crash between the two.
	PositionsFromGroup bool
	// Exclusive makes the source the only member of its group, for a
	// pipeline whose keyed state is not partitioned (see
	// AwaitSoleMember): when the group first assigns it partitions and
	// another member is there, Run returns ErrNotSoleMember before handing
	// out any record.
	Exclusive bool
	// Tasks, when set, makes the source share its group by task, for a
	// pipeline with keyed state (see Tasks): its rebalance callbacks move
	// Tasks, a move ends Run (with ErrTasksChanged, or as a stop when it
	// only gave tasks), Run may then be called again for the run built
	// anew, and a record whose key's task is another instance's goes to
	// the dead-letter output.
	Tasks *Tasks
	// Repartition, when set, is the repartition topic (engine.Repartition)
	// the source reads besides Topics: the records a key_by upstream wrote
	// there, for the chain after it. With Tasks, its partitions are the
	// tasks, and Topics' partitions are read as inputs holding no state.
	// Its watermark records (RepartitionSink.Watermark) become the
	// partitions' event times (engine.Out.PartitionTime), not records.
	Repartition string
	// RepartitionPurge is how often, at a checkpoint, the records of the
	// repartition topic's partitions the source owns that the checkpoint
	// covers are deleted (Kafka Streams' repartition.purge.interval.ms); 0
	// means 30 s.
	RepartitionPurge time.Duration
	// Txn, when set, makes the source exactly-once (it implies
	// Checkpointed): it consumes read_committed through a transactional
	// client (see Txn), whose transactions commit the group's offsets, and
	// resumes from the group's offsets, which the last committed
	// transaction wrote with the checkpoint's outputs.
	Txn *TxnConfig
	// Others are the pipeline's other Kafka sources in the same group,
	// read through this source's client (see View): Source.Views returns
	// them as engine sources. Not with TopicRegex.
	Others []ViewConfig
	// Inputs numbers the input topics' partitions as the repartition
	// topic's upstream tasks; with a Repartition, it must number every
	// topic of the Source and its Others.
	Inputs Inputs
}

// Source consumes Kafka topics in a consumer group and hands their records to
// a pipeline, committing offsets only for records the pipeline has completed
// (at-least-once).
//
// Lifetime: NewSource creates the client (it connects lazily); the engine
// calls Run once, on one goroutine, then Close once Run has returned and the
// sinks are closed. Ack may be called from any goroutine at any time until
// Close returns. Name is safe to call at any time.
//
// Memory: the client buffers at most one fetch response per broker, each at
// most FetchMaxBytes compressed (a fetch is not re-issued until the previous
// one is polled), and Run polls only when the pipeline accepted everything it
// polled before; the pipeline itself holds a bounded pool of batches. So the
// records held in memory are bounded by about brokers × FetchMaxBytes times
// the compression ratio, plus the pipeline's batches. While the pipeline is
// full, Run blocks in Out.Add and does not poll, so fetching stops.
//
// Commits: every record handed to the pipeline belongs to one pipeline batch;
// Run remembers, per partition and in reading order, the highest offset of
// each batch it sent. Ack marks batches complete, and a partition's commit
// offset advances only across the completed prefix of that queue, to the
// last completed offset + 1. A background loop commits advanced offsets every
// CommitInterval with CommitOffsetsSync, which carries the group generation
// and never runs during a join and sync, so a stale member's commit is
// rejected by the broker rather than rewinding a new owner.
//
// Rebalances: the client is built with BlockRebalanceOnPoll, and Run flushes
// everything it polled to the pipeline before allowing a rebalance, so
// revocation never races with records half handed over. On revocation the
// source waits up to RevokeTimeout for the pipeline to complete the revoked
// partitions' in-flight batches, commits their completed prefix, and forgets
// them; the commit loop is serialised with this, so it never commits a
// partition after it was given up. Lost partitions (the member was fenced)
// are forgotten without committing.
//
// Duplicates: records after the last committed offset of a partition are
// delivered again when its next owner (this source after a restart, or
// another member after a rebalance) resumes: records completed since the last
// commit (at most about CommitInterval's worth, none after a clean Close),
// records still in flight when a revocation's RevokeTimeout expired, and
// everything uncommitted after a crash or a lost partition.
type Source struct {
	name           string
	group          string
	topics         []string // nil with a regex
	log            *slog.Logger
	cl             *kgo.Client
	maxPoll        int
	commitInterval time.Duration
	revokeTimeout  time.Duration

	// views are the sources the Source reads for (source_views.go): its
	// own first, then its Views'. viewOuts are their Outs for the
	// coming or current Run, lent by the Views' Runs (viewLent is
	// signalled at each), viewsTaken says the Run took them, and
	// viewsDone is closed when it ends; guarded by mu.
	views      []sourceView
	viewOuts   []*engine.Out
	viewLent   chan struct{}
	viewsDone  chan struct{}
	viewsTaken bool
	inputs     Inputs // SourceConfig.Inputs

	// mu guards parts, changed and closing.
	mu    sync.Mutex
	parts map[srcTP]*srcPart
	// assigned holds partitions assigned since Run last announced them.
	assigned []srcTP
	// notSole is set when an exclusive source found another member in
	// its group at its first assignment (checked).
	checked bool
	notSole error
	wake    context.CancelFunc // ends Run's poll; nil before Run
	// changed is closed, and set to nil, when an in-flight batch of any
	// partition completes; a revocation waiting for batches creates it.
	changed chan struct{}
	closing bool

	// commitMu serialises commits with changes of ownership, so that no
	// commit is issued for a partition after its revocation committed.
	commitMu sync.Mutex

	// stopAtEnd and startMilli are SourceConfig's StopAtEnd, and the start
	// position Run needs to tell which partitions are already at their end.
	stopAtEnd  bool
	start      StartPosition
	startMilli int64
	regex      string
	// exclusive and instanceID are SourceConfig's Exclusive and InstanceID.
	exclusive  bool
	instanceID string
	fromGroup  bool // SourceConfig.PositionsFromGroup

	// Checkpoints (source_checkpoint.go): restore holds a checkpoint's
	// offsets, where the partitions it covers start (adjustOffsets); it is
	// written by Restore before Run and read after the run's gate is
	// open. gate is replaced (guarded by mu) when a Run of a source
	// sharing its group by task ends, for the next run's Restore.
	checkpointed bool
	txn          *Txn
	restore      map[srcTP]int64
	gate         *restoreGate
	tasks        *Tasks // SourceConfig.Tasks
	repartition  string // SourceConfig.Repartition
	// routeParts and routeInputs are, for a run routing a repartition in
	// process (SetRoute), the repartition topic's partitions and
	// the input's, and routeWMs the input partitions' watermarks at the
	// checkpoint being taken; guarded by mu.
	routeParts, routeInputs int32
	routeWMs                []engine.PartitionWatermark
	// drainLeft and drained are a draining run's (Route.Drain); guarded
	// by mu.
	drainLeft  map[int32]int
	drained    func()
	drainUntil time.Time
	// catchUp and caughtUp are a catching up run's (Route.CatchUp);
	// guarded by mu.
	catchUp  map[int32]int64
	caughtUp func()
	// resetOffset is where a partition without a committed offset starts
	// (SourceConfig.Start); a repartition topic's start at the beginning.
	resetOffset kgo.Offset
	// purgeEvery and lastPurge pace the deletion of the repartition
	// topic's read records (purgeRepartition; lastPurge is the
	// checkpointing goroutine's).
	purgeEvery time.Duration
	lastPurge  time.Time
	// upstream is, per partition of the repartition topic, the watermark
	// each upstream task last wrote there as far as the run read it, and
	// restoredUp the restored checkpoint's (repartition.go; guarded by
	// mu).
	upstream, restoredUp map[int32]*upstreamTimes
	runs                 int  // Runs begun (written by Run's goroutine, under mu)
	restoredRun          bool // Restore was called for the coming Run (guarded by mu)
	// restoreFor is the run (runs+1 when it was called) that Restore
	// last restored for, and restoredViews how many views restored for
	// it (guarded by mu).
	restoreFor, restoredViews int

	// lag is, per partition, the records after the last one polled, as of
	// the fetch that brought it (guarded by mu).
	lag map[srcTP]int64
	// firstPolled is, for a source sharing its group by task, the offset
	// of the first record polled of each partition since it was assigned
	// (guarded by mu): where a rolled back run rewinds a partition that
	// no checkpoint or commit covers.
	firstPolled map[srcTP]int64
	// waiting is the partitions of tasks a run catches up with whose
	// records a poll brought anyway, paused until the next run (guarded
	// by mu; see holdBack).
	waiting map[string][]int32
	// held is the partitions the group assigns the source now (guarded by
	// mu): none before it joins, or while other members hold them all.
	held           map[srcTP]struct{}
	gotParts       chan struct{} // signalled when partitions are assigned, for watchAssignment
	sessionTimeout time.Duration // SourceConfig.SessionTimeout

	ran atomic.Bool
	// hurry is set when a rebalance waits for the poll being handed out
	// (kgo.OnPartitionsCallbackBlocked) and not for a checkpoint (see
	// source_rebalance.go): Run puts the rest of it back and lets the
	// rebalance go on. pollCancel wakes the poll in progress (guarded by
	// mu); tookCheckpoint is set when a checkpoint of the run completed.
	hurry          atomic.Bool
	pollCancel     context.CancelFunc
	tookCheckpoint atomic.Bool
	stop           chan struct{} // closed by Close: stop the commit loop
	loopDone       chan struct{}
	bgCtx          context.Context    // of background work, cancelled by bgCancel
	bgCancel       context.CancelFunc // cancels background work (missing-topic check)
	bg             sync.WaitGroup
	closeOnce      sync.Once
	closeErr       error
}

// srcTP names a topic partition.
type srcTP struct {
	topic     string
	partition int32
}

// srcEnd is the highest offset of one partition in one pipeline batch, with
// the leader epoch it was read at.
type srcEnd struct {
	offset int64
	epoch  int32
}

// srcPart is the commit bookkeeping of one partition. A session is one
// period of ownership: it begins when Run hands out the partition's first
// record after the partition was (re)assigned, and ends on revocation or
// loss.
type srcPart struct {
	owned bool
	gen   uint64 // session number, to discard commit results of an old session
	// inflight holds the end of every batch handed out in this session and
	// not yet part of the completed prefix, in reading order.
	inflight []srcEnd
	// done counts acknowledged batch ends not yet matched to the head of
	// inflight (completed out of order, or acknowledged before Run
	// recorded the batch's end).
	done map[int64]int32
	// owed counts batch ends handed out in an earlier session and not yet
	// acknowledged; their acknowledgements are swallowed so that they are
	// not credited to a batch of the current session with the same end.
	owed map[int64]int32
	// commit is the next offset to commit (last completed + 1), with the
	// epoch of the last completed record; Offset is -1 until a batch
	// completes.
	commit kgo.EpochOffset
	// committed is the offset last committed in this session, or -1.
	committed int64
}

// srcOpen is a partition of the batch Run is filling.
type srcOpen struct {
	tp  srcTP
	p   *srcPart
	end srcEnd
}

const (
	srcDefaultCommitInterval = time.Second
	srcDefaultRevokeTimeout  = 5 * time.Second
	srcDefaultMaxPoll        = 4096
	srcDefaultFetchMaxBytes  = 8 << 20
	srcCloseCommitTimeout    = 10 * time.Second
	// srcCloseGrace is how long Close waits for the client to leave the
	// group and close (Source.leave).
	srcCloseGrace = time.Second
	// srcFetchMaxWait is how long a broker may hold a fetch waiting for
	// records: the Java consumer's fetch.max.wait.ms, which Kafka
	// Streams keeps, not franz-go's 5 s. A broker answers a connection's
	// requests in order, so a fetch the source's rewind to a checkpoint
	// (a move of tasks, an aborted transaction) leaves waiting there
	// holds the next one, from the new offsets, for that long:
	// with franz-go's, BenchmarkScaleOut's runs of two and three
	// instances exactly once took 6.5 s or more in 10 of 16, against at
	// most 4.3 s with this.
	srcFetchMaxWait = 500 * time.Millisecond
	// srcDefaultRepartitionPurge is SourceConfig.RepartitionPurge's
	// default, Kafka Streams' repartition.purge.interval.ms.
	srcDefaultRepartitionPurge = 30 * time.Second
)

// NewSource validates cfg and creates the source's client. It does not
// contact the brokers; Run does.
func NewSource(cfg SourceConfig) (*Source, error) {
	if cfg.Name == "" {
		return nil, errors.New("kafka source: no name")
	}
	fail := func(format string, args ...any) (*Source, error) {
		return nil, fmt.Errorf("kafka source %q: "+format, append([]any{cfg.Name}, args...)...)
	}
	if cfg.Group == "" {
		return fail("no consumer group")
	}
	views, err := newViews(cfg)
	if err != nil {
		return fail("%v", err)
	}
	var topics []string
	for _, v := range views {
		topics = append(topics, v.topics...)
	}
	topics = slices.DeleteFunc(topics, func(t string) bool { return t == "" })
	if (cfg.Repartition != "" || len(cfg.Others) > 0) && cfg.TopicRegex != "" {
		return fail("a topic regex, with a repartition topic or other sources read through the client")
	}
	if cfg.Repartition != "" {
		topics = append(topics, cfg.Repartition)
	}
	slices.Sort(topics)
	topics = slices.Compact(topics)
	switch {
	case len(topics) > 0 && cfg.TopicRegex != "":
		return fail("both topics and a topic regex; give one")
	case len(topics) == 0 && cfg.TopicRegex == "":
		return fail("no topics and no topic regex")
	case cfg.TopicRegex != "":
		if _, err := regexp.Compile(cfg.TopicRegex); err != nil {
			return fail("topic regex: %v", err)
		}
	}
	var start kgo.Offset
	switch cfg.Start {
	case StartEarliest, StartCommitted:
		start = kgo.NewOffset().AtStart()
	case StartLatest:
		start = kgo.NewOffset().AtEnd()
	case StartTimestamp:
		if cfg.StartTimestamp < 0 {
			return fail("negative start timestamp %d", cfg.StartTimestamp)
		}
		start = kgo.NewOffset().AfterMilli(cfg.StartTimestamp)
	default:
		return fail("unknown start position %d", int(cfg.Start))
	}
	if cfg.CommitInterval < 0 || cfg.RevokeTimeout < 0 || cfg.MaxPollRecords < 0 || cfg.FetchMaxBytes < 0 {
		return fail("negative commit interval, revoke timeout, max poll records or fetch max bytes")
	}
	base, err := cfg.Client.Opts()
	if err != nil {
		return fail("%v", err)
	}
	s := &Source{
		name:           cfg.Name,
		group:          cfg.Group,
		views:          views,
		viewOuts:       make([]*engine.Out, len(views)),
		viewLent:       make(chan struct{}, 1),
		inputs:         cfg.Inputs,
		log:            cfg.Logger,
		maxPoll:        srcOr(cfg.MaxPollRecords, srcDefaultMaxPoll),
		commitInterval: srcOr(cfg.CommitInterval, srcDefaultCommitInterval),
		revokeTimeout:  srcOr(cfg.RevokeTimeout, srcDefaultRevokeTimeout),
		parts:          make(map[srcTP]*srcPart),
		stop:           make(chan struct{}),
		loopDone:       make(chan struct{}),
		stopAtEnd:      cfg.StopAtEnd,
		start:          cfg.Start,
		startMilli:     cfg.StartTimestamp,
		regex:          cfg.TopicRegex,
		checkpointed:   cfg.Checkpointed || cfg.Txn != nil,
		exclusive:      cfg.Exclusive,
		fromGroup:      cfg.PositionsFromGroup,
		instanceID:     cfg.InstanceID,
		gate:           newRestoreGate(),
		tasks:          cfg.Tasks,
		repartition:    cfg.Repartition,
		resetOffset:    start,
		purgeEvery:     srcOr(cfg.RepartitionPurge, srcDefaultRepartitionPurge),
		held:           make(map[srcTP]struct{}),
		gotParts:       make(chan struct{}, 1),
		sessionTimeout: cfg.SessionTimeout,
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.log = s.log.With("source", cfg.Name)
	opts := append(base,
		kgo.WithLogger(newKgoLogger(s.log)),
		kgo.ConsumerGroup(cfg.Group),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(s.onAssigned),
		kgo.OnPartitionsRevoked(s.onRevoked),
		kgo.OnPartitionsLost(s.onLost),
		kgo.OnPartitionsCallbackBlocked(s.onBlocked),
		kgo.AdjustFetchOffsetsFn(s.adjustOffsets),
		kgo.ConsumeStartOffset(start),
		kgo.FetchMaxBytes(srcOr(cfg.FetchMaxBytes, srcDefaultFetchMaxBytes)),
		kgo.FetchMaxWait(srcFetchMaxWait),
	)
	if cfg.InstanceID != "" {
		opts = append(opts, kgo.InstanceID(cfg.InstanceID))
	}
	if cfg.SessionTimeout > 0 {
		opts = append(opts, kgo.SessionTimeout(cfg.SessionTimeout))
	}
	if cfg.TopicRegex != "" {
		opts = append(opts, kgo.ConsumeRegex(), kgo.ConsumeTopics(cfg.TopicRegex))
	} else {
		s.topics = topics
		opts = append(opts, kgo.ConsumeTopics(topics...))
	}
	if cfg.Tasks != nil && s.tasksTopic() != "" {
		opts = append(opts, kgo.Balancers(newTaskBalancer(cfg.Tasks, s.tasksTopic()), kgo.CooperativeStickyBalancer()))
	}
	if cfg.Txn != nil {
		manual := &manualTopics{}
		topts, err := txnOpts(cfg.Client, cfg.Txn, manual, s.log)
		if err != nil {
			return fail("%v", err)
		}
		sess, err := kgo.NewGroupTransactSession(append(topts, opts...)...)
		if err != nil {
			return fail("%v", err)
		}
		s.txn = &Txn{id: cfg.Txn.ID, timeout: srcOr(cfg.Txn.Timeout, time.Minute), sess: sess, cl: sess.Client(), manual: manual, log: s.log}
		s.cl = s.txn.cl
	} else if s.cl, err = kgo.NewClient(opts...); err != nil {
		return fail("%v", err)
	}
	if cfg.Tasks != nil {
		cfg.Tasks.setWake(s.wakeRun)
		cfg.Tasks.setProbe(func(warmups []int32) {
			s.log.Info("kafka source: warm-up copies are caught up with the changelog; asking the group to rebalance, so that their tasks move here",
				"source", s.name, "group", s.group, "warmups", warmups)
			s.cl.ForceRebalance()
		})
	}
	var bgCtx context.Context
	bgCtx, s.bgCancel = context.WithCancel(context.Background())
	s.bgCtx = bgCtx
	if s.checkpointed {
		close(s.loopDone)
	} else {
		go s.commitLoop(bgCtx)
	}
	return s, nil
}

// srcOr returns v, or def when v is zero.
func srcOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Name implements engine.Source.
func (s *Source) Name() string { return s.name }

// Run implements engine.Source: it polls records and adds them to out until
// ctx is done (then it flushes and returns nil) or a fatal error occurs
// (authentication or authorisation failures; other client errors are logged
// and retried by the client). It must be called once.
func (s *Source) Run(ctx context.Context, out *engine.Out) error {
	if !s.ran.CompareAndSwap(false, true) {
		return fmt.Errorf("kafka source %q: Run called while running, or again for a source that does not share its group by task", s.name)
	}
	if s.tasks != nil {
		defer s.endTaskRun()
	}
	defer s.endViews()
	// However Run ends, the rebalances its polls blocked proceed: a run
	// that stops or fails takes no checkpoint a rebalance could wait for.
	defer s.allowRebalance()
	s.mu.Lock()
	s.runs++
	s.mu.Unlock()
	s.tookCheckpoint.Store(false)
	if s.tasks != nil {
		s.tasks.checkpointed() // a checkpoint the last run awaited failed
	}
	if s.runs > 1 {
		s.forgetStaleRestore()
	}
	s.restoreDone() // no Restore before Run: the group's offsets stand
	if s.runs > 1 {
		s.rewind()
	}
	s.mu.Lock()
	s.upstream = cloneUpstream(s.restoredUp)
	s.mu.Unlock()
	// The run's state is the restored checkpoint's from here on, even if
	// it stops before the other sources lend their Outs: its final
	// checkpoint snapshots it.
	outs, err := s.borrow(ctx, out)
	if err != nil {
		return nil // stopped before the other sources began
	}
	if s.topics != nil {
		s.bg.Go(func() { s.warnMissingTopics(ctx) })
	}
	s.bg.Go(func() { s.watchAssignment(ctx) })
	r := &sourceRun{s: s, out: out, owned: s.ownedTasks()}
	for _, o := range outs {
		r.views = append(r.views, runView{out: o, last: -1})
	}
	stopWatch := context.AfterFunc(ctx, func() { r.stopped.Store(true) })
	defer stopWatch()
	if s.stopAtEnd {
		var err error
		if r.ends, err = s.endOffsets(ctx); err != nil {
			return err
		}
		if r.ends.done() {
			s.log.Info("kafka source: nothing to read before the end offsets; stopping", "stop_at", "latest")
			return nil
		}
	}
	// An exclusive source's first assignment may find another member
	// (checkSole), which must end Run even when no record comes.
	pollCtx, wake := context.WithCancel(ctx)
	defer wake()
	s.mu.Lock()
	s.wake = wake
	s.mu.Unlock()
	for {
		if done, err := r.poll(ctx, pollCtx); done || err != nil {
			return err
		}
	}
}

// sourceRun is the state of one Run, owned by its goroutine (stopped is set
// by ctx's AfterFunc).
type sourceRun struct {
	s       *Source
	out     *engine.Out // the Source's own, views[0]'s
	views   []runView   // by view (Source.views)
	ends    *srcEnds    // with stop_at: latest, where to stop; else nil
	hdrs    []record.Header
	lastErr string // the last poll error logged, not to repeat it
	owned   []bool // sharing by task: the tasks this run owns (ownedTasks)
	stopped atomic.Bool
}

// runView is the part of a Run handing records to one of the sources it
// reads for: their Out, and the partitions of the batch being filled.
type runView struct {
	out  *engine.Out
	open []srcOpen // partitions in the batch being filled
	last int       // index in open of the previous record's partition
}

// poll polls once and hands out what it got; done ends Run, with err.
func (r *sourceRun) poll(ctx, pollCtx context.Context) (done bool, err error) {
	s := r.s
	if r.awaitCheckpoint(pollCtx) {
		// A rebalance waits for a checkpoint: it is asked for, and
		// nothing is polled until its barrier.
		return false, r.barrier()
	}
	pctx, cancel := s.pollContext(r.out.PollContext(pollCtx))
	fs := s.cl.PollRecords(pctx, s.maxPoll)
	cancel()
	if ctx.Err() != nil {
		// Whatever this poll returned was never handed out, so it is
		// not committed and will be read again.
		r.putBack(fs.RecordIter())
		return true, r.finish()
	}
	s.notePolled(fs)
	if err := r.takeAssignment(); errors.Is(err, errTasksGained) {
		return true, nil // nothing of this poll was handed out
	} else if err != nil {
		return true, err
	}
	s.trackLag(fs)
	if fatal := r.pollErrors(fs); fatal != nil {
		r.finish()
		return true, fatal
	}
	hurried := false
	hold := r.holding()
	for it := fs.RecordIter(); !it.Done(); {
		if r.stopped.Load() {
			r.putBack(it)
			r.holdBack(hold)
			return true, r.finish()
		}
		if r.hurried() {
			// A rebalance waits for this poll: the rest of it is read
			// again after it, by whichever member owns it then.
			r.moveBack(it)
			hurried = true
			s.log.Debug("kafka source: a rebalance waits for the poll; the records not yet handed out are read again after it", "group", s.group)
			break
		}
		kr := it.Next()
		if hold != nil && hold.skip(kr) {
			continue
		}
		if err := r.hand(kr); err != nil {
			return true, err
		}
	}
	r.holdBack(hold)
	if err := r.handedOut(); err != nil {
		return true, err
	}
	if !hurried {
		s.noteDrained(fs)
	}
	if r.ends.done() {
		s.log.Info("kafka source: reached the end offsets; stopping", "stop_at", "latest")
		return true, nil
	}
	// Everything polled is handed out: a safe point for a checkpoint.
	return false, r.barrier()
}

// takeAssignment announces newly assigned partitions, or ends the run when
// an exclusive source found another member in its group: then nothing of
// this poll is handed out, and the source leaves the group before reading
// anything.
func (r *sourceRun) takeAssignment() error {
	s := r.s
	s.mu.Lock()
	announce := s.assigned
	s.assigned = nil
	notSole := s.notSole
	if s.tasks != nil && s.tasks.catchingUp() {
		// Partitions the group gave the instance wait for the next run,
		// which restores their tasks.
		announce = slices.DeleteFunc(announce, func(tp srcTP) bool { return !s.theRuns(tp) })
	}
	from := make([]int64, len(announce))
	for i := range from {
		from[i] = engine.NoWatermark
	}
	if s.routeParts > 0 {
		// Routing in process, the repartition topic is not read: its
		// partitions hold no event time back. An input partition
		// starts where the topic's tables say its last reader had
		// read it, so that one another instance read to its end does
		// not hold the watermark back for good.
		announce = slices.DeleteFunc(announce, func(tp srcTP) bool { return tp.topic == s.repartition })
		for i, tp := range announce {
			from[i] = s.upstreamWatermark(s.upstreamID(tp))
		}
	}
	s.mu.Unlock()
	if notSole != nil {
		s.allowRebalance()
		return notSole
	}
	if s.tasks != nil && s.tasks.Moved() && !s.tasks.catchingUp() {
		s.allowRebalance()
		if !s.tasks.Lost() && s.tasks.stopRun() {
			// Only gained tasks: the run stops, drains and takes its
			// final checkpoint; the next one starts from there.
			return errTasksGained
		}
		return fmt.Errorf("kafka source %q: %w", s.name, ErrTasksChanged)
	}
	for i, tp := range announce {
		if err := r.views[s.viewOf(tp.topic)].out.AnnounceFrom(tp.topic, tp.partition, from[i]); err != nil {
			return err
		}
	}
	return nil
}

// pollErrors logs a poll's errors, once while they persist, and returns
// the first fatal one.
func (r *sourceRun) pollErrors(fs kgo.Fetches) (fatal error) {
	fs.EachError(func(topic string, partition int32, err error) {
		switch {
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		case errors.Is(err, kgo.ErrClientClosed):
			fatal = fmt.Errorf("kafka source %q: the client was closed while running", r.s.name)
		case srcFatal(err):
			fatal = fmt.Errorf("kafka source %q: %w", r.s.name, err)
		default:
			if msg := err.Error(); msg != r.lastErr {
				r.lastErr = msg
				r.s.log.Warn("kafka source: consuming", "topic", topic, "partition", partition, "error", err)
			}
		}
	})
	return fatal
}

// boundary records that the batch view v was filling was sent.
func (r *sourceRun) boundary(v *runView) {
	if len(v.open) > 0 {
		r.s.addInflight(v.open)
		clear(v.open)
		v.open = v.open[:0]
	}
	v.last = -1
}

// barrier is the run's safe point (engine.Barrier), for every Out.
func (r *sourceRun) barrier() error {
	var err error
	if len(r.views) == 1 {
		err = r.out.Barrier()
	} else {
		outs := make([]*engine.Out, len(r.views))
		for i := range r.views {
			outs[i] = r.views[i].out
		}
		err = engine.Barrier(outs...) // finish sent every batch
	}
	if err == nil {
		r.afterCheckpoint()
	}
	return err
}

// putBack moves the client back to the first of the records left in it,
// polled but not handed out, when the run stops. Exactly once, the final
// checkpoint's transaction commits the offsets of everything the client
// polled (franz-go's uncommitted offsets), which would skip them;
// moving the client back (SetOffsets, before the poll lets a rebalance
// proceed) commits the position of the last record handed out. At least
// once the source commits what was handed out itself.
func (r *sourceRun) putBack(it *kgo.FetchesRecordIter) {
	if r.s.txn == nil {
		return
	}
	r.moveBack(it)
}

// hurried reports whether a rebalance waits for the poll being handed
// out (Source.hurry), or the run awaits a checkpoint (Tasks.askCheckpoint),
// and the run may stop handing it out: not while it drains the
// repartition topic, whose count of records read is kept by whole polls
// (noteDrained).
func (r *sourceRun) hurried() bool {
	s := r.s
	if !s.hurry.Load() && !s.tasks.awaitingCheckpoint() {
		return false
	}
	s.mu.Lock()
	draining := len(s.drainLeft) > 0
	s.mu.Unlock()
	return !draining
}

// moveBack moves the client back to the first of the records left in
// it, so that the next poll, or the transaction's commit of the polled
// offsets, starts there.
func (r *sourceRun) moveBack(it *kgo.FetchesRecordIter) {
	at := map[string]map[int32]kgo.EpochOffset{}
	for !it.Done() {
		kr := it.Next()
		if at[kr.Topic] == nil {
			at[kr.Topic] = map[int32]kgo.EpochOffset{}
		}
		if _, ok := at[kr.Topic][kr.Partition]; !ok {
			at[kr.Topic][kr.Partition] = kgo.EpochOffset{Epoch: kr.LeaderEpoch, Offset: kr.Offset}
		}
	}
	r.s.cl.SetOffsets(at)
}

// finish flushes what was handed out and lets a rebalance proceed.
func (r *sourceRun) finish() error {
	err := r.flush()
	r.s.allowRebalance()
	return err
}

// handedOut flushes a poll that was handed out and lets a rebalance
// proceed, unless rebalances wait for a checkpoint (atCheckpoint).
func (r *sourceRun) handedOut() error {
	err := r.flush()
	if !r.s.atCheckpoint() {
		r.s.allowRebalance()
	}
	return err
}

// flush sends the batches being filled.
func (r *sourceRun) flush() error {
	for i := range r.views {
		v := &r.views[i]
		if err := v.out.Flush(); err != nil {
			return err
		}
		r.boundary(v)
	}
	return nil
}

// hand adds one polled record to the batch, or its dead letter when a
// JSON source's record is not JSON, tracking the batch's partitions.
func (r *sourceRun) hand(kr *kgo.Record) error {
	tp := srcTP{kr.Topic, kr.Partition}
	vi := r.s.viewOf(kr.Topic)
	v := &r.views[vi]
	if v.last < 0 || v.open[v.last].tp != tp {
		v.last = slices.IndexFunc(v.open, func(o srcOpen) bool { return o.tp == tp })
		if v.last < 0 {
			v.open = append(v.open, srcOpen{tp: tp, p: r.s.session(tp)})
			v.last = len(v.open) - 1
		}
	}
	v.open[v.last].end = srcEnd{offset: kr.Offset, epoch: kr.LeaderEpoch}
	rec := record.Record{
		Key:       kr.Key,
		Value:     kr.Value,
		Timestamp: kr.Timestamp.UnixMilli(),
		Origin:    record.Origin{Source: r.s.views[vi].name, Topic: kr.Topic, Partition: kr.Partition, Offset: kr.Offset},
	}
	format := r.s.views[vi].format
	if len(kr.Headers) > 0 {
		r.hdrs = r.hdrs[:0]
		for _, h := range kr.Headers {
			if h.Key == RepartitionOriginHeader && kr.Topic == r.s.repartition {
				// The repartition's own: it names the source the
				// record was read from upstream.
				if up := r.s.upstreamView(h.Value); up >= 0 {
					rec.Origin.Source, format = r.s.views[up].name, r.s.views[up].format
				}
				continue
			}
			r.hdrs = append(r.hdrs, record.Header{Key: h.Key, Value: h.Value})
		}
		rec.Headers = r.hdrs
	}
	if format == FormatJSON && !wjson.Valid(kr.Value) {
		return r.dead(v, rec, kr, fmt.Sprintf("%s[%d]@%d: not JSON: %s", kr.Topic, kr.Partition, kr.Offset, srcJSONError(kr.Value)))
	}
	if kr.Topic == r.s.repartition && r.s.repartition != "" {
		if isRepartitionWatermark(kr) {
			return r.partitionTime(v, rec, kr)
		}
		if r.applied(kr) {
			return v.out.Skip(rec.Origin)
		}
	}
	if reason := r.foreignTask(kr); reason != "" {
		return r.dead(v, rec, kr, reason)
	}
	if err := v.out.Add(rec); err != nil {
		return err
	}
	if v.out.Pending() == 0 { // Add sent the full batch
		r.boundary(v)
	}
	r.ends.read(tp, kr.Offset)
	return nil
}

// dead hands out rec's dead letter, for reason, to view v's Out.
func (r *sourceRun) dead(v *runView, rec record.Record, kr *kgo.Record, reason string) error {
	// Out.Dead keeps the header slice: give it its own.
	rec.Headers = slices.Clone(rec.Headers)
	// Out.Dead sends the batch when its dead letters fill it; we see
	// that as Pending dropping to zero, which is only unambiguous when
	// the batch holds records. Otherwise, send the batch ourselves so
	// that we know where it ends.
	hadRecords := v.out.Pending() > 0
	if err := v.out.Dead(rec, reason); err != nil {
		return err
	}
	if !hadRecords {
		if err := v.out.Flush(); err != nil {
			return err
		}
		r.boundary(v)
	} else if v.out.Pending() == 0 {
		r.boundary(v)
	}
	r.ends.read(srcTP{kr.Topic, kr.Partition}, kr.Offset)
	return nil
}

// srcFatal reports errors that retrying will not fix: the credentials or
// permissions are wrong, or the broker refuses the session timeout.
func srcFatal(err error) bool {
	for _, e := range []error{
		kerr.SaslAuthenticationFailed, kerr.UnsupportedSaslMechanism, kerr.IllegalSaslState,
		kerr.TopicAuthorizationFailed, kerr.GroupAuthorizationFailed, kerr.ClusterAuthorizationFailed,
		kerr.InvalidGroupID, kerr.InvalidSessionTimeout,
	} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// srcJSONError says why v is not JSON. It runs only on the error path.
func srcJSONError(v []byte) string {
	if v == nil {
		return "the value is null (a tombstone)"
	}
	var raw json.RawMessage
	if err := json.Unmarshal(v, &raw); err != nil {
		return err.Error()
	}
	return "invalid JSON"
}

// warnMissingTopics logs, once, each configured topic that does not exist
// yet. The client keeps looking for it; this only tells the user why nothing
// arrives.
func (s *Source) warnMissingTopics(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	details, err := kadm.NewClient(s.cl).ListTopics(ctx, s.topics...)
	if err != nil {
		return // the consumer reports connection problems itself
	}
	for _, t := range s.topics {
		if d, ok := details[t]; !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
			s.log.Warn("kafka source: topic does not exist; waiting for it to be created", "topic", t)
		}
	}
}

// session returns tp's bookkeeping, beginning a new session if the
// partition is not owned: Run is about to hand out its first record since
// the partition was assigned.
func (s *Source) session(tp srcTP) *srcPart {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.parts[tp]
	if p == nil {
		p = &srcPart{}
		s.parts[tp] = p
	}
	if !p.owned {
		p.owned = true
		p.gen++
		p.inflight = nil
		p.done = make(map[int64]int32)
		p.commit = kgo.EpochOffset{Epoch: -1, Offset: -1}
		p.committed = -1
	}
	return p
}

// addInflight records the ends of a batch Run just sent.
func (s *Source) addInflight(open []srcOpen) {
	s.mu.Lock()
	defer s.mu.Unlock()
	moved := false
	for _, o := range open {
		o.p.inflight = append(o.p.inflight, o.end)
		moved = o.p.advance() || moved
	}
	if moved {
		s.signalLocked()
	}
}

// Ack implements engine.Acker: the batch covering positions is complete.
func (s *Source) Ack(positions []engine.Position) {
	s.mu.Lock()
	defer s.mu.Unlock()
	moved := false
	for _, pos := range positions {
		tp := srcTP{pos.Topic, pos.Partition}
		p := s.parts[tp]
		if p == nil {
			continue
		}
		if n := p.owed[pos.Offset]; n > 0 {
			if n == 1 {
				delete(p.owed, pos.Offset)
			} else {
				p.owed[pos.Offset] = n - 1
			}
			if !p.owned && len(p.owed) == 0 {
				delete(s.parts, tp)
			}
			continue
		}
		if !p.owned {
			continue
		}
		p.done[pos.Offset]++
		moved = p.advance() || moved
	}
	if moved {
		s.signalLocked()
	}
}

// advance moves the commit offset over the completed head of inflight.
func (p *srcPart) advance() bool {
	moved := false
	for len(p.inflight) > 0 {
		e := p.inflight[0]
		n := p.done[e.offset]
		if n == 0 {
			break
		}
		if n == 1 {
			delete(p.done, e.offset)
		} else {
			p.done[e.offset] = n - 1
		}
		p.commit = kgo.EpochOffset{Epoch: e.epoch, Offset: e.offset + 1}
		p.inflight = p.inflight[1:]
		moved = true
	}
	if len(p.inflight) == 0 {
		p.inflight = nil // let the backing array go
	}
	return moved
}

func (s *Source) signalLocked() {
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
}

// commitLoop commits completed offsets every commitInterval until Close.
func (s *Source) commitLoop(ctx context.Context) {
	defer close(s.loopDone)
	t := time.NewTicker(s.commitInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			cctx, cancel := context.WithTimeout(ctx, max(s.commitInterval, 10*time.Second))
			if err := s.commit(cctx, nil); err != nil && ctx.Err() == nil {
				s.log.Warn("kafka source: committing offsets", "group", s.group, "error", err)
			}
			cancel()
		}
	}
}

// commit commits the completed offsets of owned partitions that moved since
// their last commit; with only, just those partitions.
func (s *Source) commit(ctx context.Context, only map[string][]int32) error {
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	return s.commitLocked(ctx, only)
}

// commitLocked is commit with commitMu held.
func (s *Source) commitLocked(ctx context.Context, only map[string][]int32) error {
	type sent struct {
		p   *srcPart
		gen uint64
	}
	offsets := make(map[string]map[int32]kgo.EpochOffset)
	sessions := make(map[srcTP]sent)
	s.mu.Lock()
	for tp, p := range s.parts {
		if !p.owned || p.commit.Offset < 0 || p.commit.Offset == p.committed {
			continue
		}
		if only != nil && !slices.Contains(only[tp.topic], tp.partition) {
			continue
		}
		if offsets[tp.topic] == nil {
			offsets[tp.topic] = make(map[int32]kgo.EpochOffset)
		}
		offsets[tp.topic][tp.partition] = p.commit
		sessions[tp] = sent{p, p.gen}
	}
	s.mu.Unlock()
	if len(offsets) == 0 {
		return nil
	}
	var errs []error
	s.cl.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			errs = append(errs, err)
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					errs = append(errs, fmt.Errorf("%s[%d]: %w", t.Topic, p.Partition, err))
					continue
				}
				tp := srcTP{t.Topic, p.Partition}
				if sn, ok := sessions[tp]; ok && sn.p.gen == sn.gen {
					sn.p.committed = offsets[t.Topic][p.Partition].Offset
				}
			}
		}
	})
	return errors.Join(errs...)
}

// onRevoked runs in the group's rebalance, while Run is not handing out
// records (BlockRebalanceOnPoll): it waits for the revoked partitions'
// in-flight batches, commits what is complete and gives them up.
// onAssigned queues newly assigned partitions for Run to announce to the
// pipeline (engine.Out.Announce) before their first records, so that an
// event-time pipeline's watermark waits for them.
func (s *Source) onAssigned(ctx context.Context, cl *kgo.Client, assigned map[string][]int32) {
	if s.exclusive {
		s.checkSole(ctx, cl)
	}
	s.mu.Lock()
	for topic, parts := range assigned {
		for _, p := range parts {
			s.assigned = append(s.assigned, srcTP{topic, p})
			s.held[srcTP{topic, p}] = struct{}{}
		}
	}
	select {
	case s.gotParts <- struct{}{}:
	default:
	}
	s.mu.Unlock()
	s.moveTasks()
}

// checkSole checks, at an exclusive source's first assignment, that no
// other member shares the group, and records ErrNotSoleMember if one does.
func (s *Source) checkSole(ctx context.Context, cl *kgo.Client) {
	s.mu.Lock()
	checked := s.checked
	s.checked = true
	s.mu.Unlock()
	if checked {
		return
	}
	memberID, _ := cl.GroupMetadata()
	others, err := otherMembers(ctx, kadm.NewClient(cl), s.group, memberID, s.instanceID)
	if err != nil {
		// Not knowing is not a reason to stop: the standby wait before
		// the run found the group empty.
		s.log.Warn("kafka source: could not check that the group has no other member", "group", s.group, "error", err)
		return
	}
	if len(others) > 0 {
		s.mu.Lock()
		if s.wake != nil {
			s.wake()
		}
		s.notSole = fmt.Errorf("kafka source %q: %w %q (%s), which joined at the same time as this instance", s.name, ErrNotSoleMember, s.group, strings.Join(others, ", "))
		s.mu.Unlock()
	}
}

func (s *Source) onRevoked(ctx context.Context, _ *kgo.Client, revoked map[string][]int32) {
	if len(revoked) == 0 {
		return
	}
	if s.checkpointed {
		// Offsets are committed by checkpoints only.
		s.commitMu.Lock()
		defer s.commitMu.Unlock()
		s.release(revoked)
		s.moveTasks()
		return
	}
	if n := s.waitInflight(revoked); n > 0 {
		s.log.Warn("kafka source: partitions revoked with batches still in flight; their records will be processed again by the next owner",
			"group", s.group, "batches", n, "waited", s.revokeTimeout)
	}
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	cctx, cancel := context.WithTimeout(ctx, srcCloseCommitTimeout)
	err := s.commitLocked(cctx, revoked)
	cancel()
	if err != nil {
		s.log.Warn("kafka source: committing revoked partitions", "group", s.group, "error", err)
	}
	s.release(revoked)
}

// onLost gives up partitions without committing: the member was fenced, so
// another member may own them already.
func (s *Source) onLost(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	if len(lost) == 0 {
		return
	}
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	s.release(lost)
	s.moveTasks()
}

// release ends the sessions of the given partitions, which the source no
// longer holds. Batches still in flight become owed, so that their late
// acknowledgements are not mistaken for those of a later session.
func (s *Source) release(tps map[string][]int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for topic, partitions := range tps {
		for _, partition := range partitions {
			tp := srcTP{topic, partition}
			delete(s.held, tp)
			delete(s.firstPolled, tp)
			p := s.parts[tp]
			if p == nil || !p.owned {
				continue
			}
			p.owned = false
			for _, e := range p.inflight {
				if n := p.done[e.offset]; n > 0 {
					p.done[e.offset] = n - 1 // completed, just not contiguously
					continue
				}
				if p.owed == nil {
					p.owed = make(map[int64]int32)
				}
				p.owed[e.offset]++
			}
			p.inflight, p.done = nil, nil
			if len(p.owed) == 0 {
				delete(s.parts, tp)
			}
		}
	}
}

// waitInflight waits, up to revokeTimeout (not at all while closing), until
// the given partitions have no batch in flight, and returns how many remain.
func (s *Source) waitInflight(tps map[string][]int32) int {
	deadline := time.NewTimer(s.revokeTimeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		n := 0
		for topic, partitions := range tps {
			for _, partition := range partitions {
				if p := s.parts[srcTP{topic, partition}]; p != nil && p.owned {
					n += len(p.inflight)
				}
			}
		}
		if n == 0 || s.closing {
			s.mu.Unlock()
			return n
		}
		if s.changed == nil {
			s.changed = make(chan struct{})
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			return n
		}
	}
}

// leave leaves the group and closes the client, and reports whether that
// ended within grace; if not, it goes on in the background. The client
// leaves only once its group goroutine has: one waiting for a JoinGroup
// answer waits for the rebalance, which a member gone without leaving (a
// static member that stopped, a crash) holds up until its session times
// out. The process need not wait for that: its final checkpoint is
// taken. The leave is bounded too, so that an unreachable coordinator
// cannot hold it up: the group then notices the member is gone after its
// session timeout.
func (s *Source) leave(grace time.Duration) bool {
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Leaving the group revokes everything; onRevoked finds nothing
		// left to commit.
		ctx, cancel := context.WithTimeout(context.Background(), srcCloseCommitTimeout)
		if lerr := s.cl.LeaveGroupContext(ctx); lerr != nil && ctx.Err() != nil {
			s.log.Warn("kafka source: leaving the group timed out", "group", s.group)
		}
		cancel()
		s.leaveStatic()
		s.cl.Close()
	}()
	select {
	case <-done:
		return true
	case <-time.After(grace):
		return false
	}
}

// leaveStatic has a static member that gave way to another member
// leave: a static member does not leave when it closes, and the group
// would keep its place (and the other member wait) until its session
// times out.
func (s *Source) leaveStatic() {
	s.mu.Lock()
	leave := s.notSole != nil && s.instanceID != ""
	s.mu.Unlock()
	if !leave {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), srcCloseCommitTimeout)
	defer cancel()
	_, err := kadm.NewClient(s.cl).LeaveGroup(ctx, kadm.LeaveGroup(s.group).InstanceIDs(s.instanceID).Reason("weir: another instance is active"))
	if err != nil {
		s.log.Warn("kafka source: leaving the group as static member failed; the group keeps its place until its session times out",
			"group", s.group, "instance_id", s.instanceID, "error", err)
	}
}

// Close commits every completed offset, leaves the group and closes the
// client. The engine calls it after Run returned and the sinks closed, so
// every acknowledgement that will ever come has come. It returns an error if
// the final commit failed; those records will be read again.
func (s *Source) Close() error {
	s.closeOnce.Do(func() {
		close(s.stop)
		<-s.loopDone
		s.mu.Lock()
		s.closing = true
		s.signalLocked()
		s.mu.Unlock()
		var err error
		if !s.checkpointed {
			ctx, cancel := context.WithTimeout(context.Background(), srcCloseCommitTimeout)
			err = s.commit(ctx, nil)
			cancel()
		}
		s.bgCancel()
		s.cl.AllowRebalance()
		if !s.leave(srcCloseGrace) {
			s.log.Info("kafka source: closing without waiting for the group to let this member go (a rebalance waiting for a member gone without leaving, or an unreachable coordinator); the leave goes on in the background",
				"group", s.group, "waited", srcCloseGrace)
		}
		s.bg.Wait()
		if err != nil {
			s.closeErr = fmt.Errorf("kafka source %q: committing offsets on close: %w", s.name, err)
		}
	})
	return s.closeErr
}
