package kafka

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// ClientConfig is how weir reaches a Kafka cluster. The zero value with
// Brokers set connects in plain text without authentication. It is a plain
// value, safe to copy and to share between goroutines once built.
type ClientConfig struct {
	// Brokers are the seed brokers, host:port.
	Brokers []string
	// ClientID names the client to the brokers; default "weir".
	ClientID string
	SASL     SASLConfig
	TLS      TLSConfig
}

// SASL mechanisms.
const (
	SASLPlain       = "PLAIN"
	SASLScramSHA256 = "SCRAM-SHA-256"
	SASLScramSHA512 = "SCRAM-SHA-512"
)

// SASLConfig enables SASL authentication when Mechanism is set.
type SASLConfig struct {
	Mechanism string // "", SASLPlain, SASLScramSHA256 or SASLScramSHA512
	User      string
	Password  string
}

// TLSConfig enables TLS when Enabled is set. Files are PEM.
type TLSConfig struct {
	Enabled bool
	// CAFile adds certificate authorities to the system's; empty uses the
	// system's alone.
	CAFile string
	// CertFile and KeyFile give a client certificate, for mutual TLS; both
	// or neither.
	CertFile, KeyFile string
	// ServerName overrides the name checked in the broker's certificate.
	ServerName string
	// InsecureSkipVerify turns off certificate checks; for tests only.
	InsecureSkipVerify bool
}

// Opts returns the franz-go options for c: seed brokers, client id, SASL
// and TLS. It fails if a file cannot be read or a setting is inconsistent.
func (c ClientConfig) Opts() ([]kgo.Opt, error) {
	if len(c.Brokers) == 0 {
		return nil, errors.New("kafka: no brokers")
	}
	id := c.ClientID
	if id == "" {
		id = "weir"
	}
	opts := []kgo.Opt{kgo.SeedBrokers(c.Brokers...), kgo.ClientID(id)}
	if m, err := c.SASL.mechanism(); err != nil {
		return nil, err
	} else if m != nil {
		opts = append(opts, kgo.SASL(m))
	}
	if c.TLS.Enabled {
		tc, err := c.TLS.config()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	return opts, nil
}

func (s SASLConfig) mechanism() (sasl.Mechanism, error) {
	switch strings.ToUpper(s.Mechanism) {
	case "":
		return nil, nil
	case SASLPlain:
		return plain.Auth{User: s.User, Pass: s.Password}.AsMechanism(), nil
	case SASLScramSHA256:
		return scram.Auth{User: s.User, Pass: s.Password}.AsSha256Mechanism(), nil
	case SASLScramSHA512:
		return scram.Auth{User: s.User, Pass: s.Password}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("kafka: unknown SASL mechanism %q (want %s, %s or %s)", s.Mechanism, SASLPlain, SASLScramSHA256, SASLScramSHA512)
}

func (t TLSConfig) config() (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("kafka: TLS CA file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("kafka: TLS CA file %s holds no PEM certificate", t.CAFile)
		}
		tc.RootCAs = pool
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		return nil, errors.New("kafka: TLS needs both a certificate file and a key file, or neither")
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("kafka: TLS client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// kgoLogger sends franz-go's log to slog. franz-go's info messages (group
// joins, assignments) become debug messages; its debug messages are dropped.
type kgoLogger struct {
	log   *slog.Logger
	level kgo.LogLevel
}

func newKgoLogger(log *slog.Logger) kgoLogger {
	ctx := context.Background()
	level := kgo.LogLevelNone
	switch {
	case log.Enabled(ctx, slog.LevelDebug):
		level = kgo.LogLevelInfo
	case log.Enabled(ctx, slog.LevelWarn):
		level = kgo.LogLevelWarn
	case log.Enabled(ctx, slog.LevelError):
		level = kgo.LogLevelError
	}
	return kgoLogger{log: log, level: level}
}

func (l kgoLogger) Level() kgo.LogLevel { return l.level }

func (l kgoLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	lv := slog.LevelDebug
	switch level {
	case kgo.LogLevelError:
		lv = slog.LevelError
	case kgo.LogLevelWarn:
		lv = slog.LevelWarn
	case kgo.LogLevelDebug:
		return
	}
	l.log.Log(context.Background(), lv, "kafka client: "+msg, keyvals...)
}
