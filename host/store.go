package host

import (
	"fmt"

	"github.com/weir-stream/weir/host/internal/config"
	"github.com/weir-stream/weir/state"
)

// openStore opens the state store the config names.
func openStore(cfg *config.Pipeline, opts Options) (state.Store, func() error, error) {
	switch cfg.State.Backend {
	case config.StateBadger:
		b, err := state.OpenBadger(state.BadgerOptions{Dir: cfg.State.Dir, Logger: opts.Logger, Checkpointed: cfg.Checkpoints.Enabled})
		if err != nil {
			return nil, nil, fmt.Errorf("%s: state.dir: %w", cfg.State.At("dir"), err)
		}
		return b, b.Close, nil
	}
	return state.NewMemory(), nil, nil
}
