package host

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/weir-stream/weir/host/internal/pluginop"
)

// The plugin operators' reload, shadow and status types, defined where
// the plugin operator lives.
type (
	PluginStatus  = pluginop.PluginStatus
	ReloadOutcome = pluginop.ReloadOutcome
	ReloadResult  = pluginop.ReloadResult
)

// Reload outcomes; see pluginop.ReloadOutcome.
const (
	ReloadSwapped    = pluginop.ReloadSwapped
	ReloadProbation  = pluginop.ReloadProbation
	ReloadRolledBack = pluginop.ReloadRolledBack
	ReloadReplaced   = pluginop.ReloadReplaced
	ReloadRefused    = pluginop.ReloadRefused
	ReloadUnchanged  = pluginop.ReloadUnchanged
)

// pluginOps are the pipeline's map, flat_map and filter operators.
func (p *Pipeline) pluginOps() []*pluginop.Operator {
	var out []*pluginop.Operator
	for _, o := range p.ops {
		if s, ok := o.(*pluginop.Operator); ok {
			out = append(out, s)
		}
	}
	return out
}

// ErrNoSuchPlugin is returned by ReloadPlugins and Reload for an operator
// that runs no plugin.
var ErrNoSuchPlugin = errors.New("no plugin operator of that name")

// reloadAll reloads the named operator's plugin, or every plugin
// operator's when operator is "".
func (p *Pipeline) reloadAll(ctx context.Context, operator string) ([]pluginop.Ticket, error) {
	var tickets []pluginop.Ticket
	for _, s := range p.pluginOps() {
		if operator == "" || s.Name() == operator {
			tickets = append(tickets, s.Reload(ctx))
		}
	}
	if len(tickets) == 0 && operator != "" {
		return nil, fmt.Errorf("%w: %q", ErrNoSuchPlugin, operator)
	}
	return tickets, nil
}

// ReloadPlugins reloads the plugin of the named operator, or of every
// plugin operator when operator is "": each is built (Go source), compiled,
// checked and initialised, and swapped in between batches if it changed.
// A plugin that fails to load leaves its live version running; the errors
// are returned joined. A version swapped in is on probation for its first
// batches and may still be rolled back; Reload reports that. It is safe to
// call while the pipeline runs, from any goroutine.
func (p *Pipeline) ReloadPlugins(ctx context.Context, operator string) error {
	tickets, err := p.reloadAll(ctx, operator)
	if err != nil {
		return err
	}
	var errs []error
	for i := range tickets {
		errs = append(errs, tickets[i].Err())
	}
	return errors.Join(errs...)
}

// Reload reloads plugins as ReloadPlugins does and reports what happened to
// each operator. A version swapped in is on probation: Reload waits up to
// wait (and no longer than ctx) for every such probation to end, so that
// the result says whether the version stayed (ReloadSwapped) or was rolled
// back; one still on probation then is reported as ReloadProbation. Only
// an operator that runs no plugin is an error (ErrNoSuchPlugin); a refused
// version is a result. It is safe to call while the pipeline runs, from
// any goroutine.
func (p *Pipeline) Reload(ctx context.Context, operator string, wait time.Duration) ([]ReloadResult, error) {
	tickets, err := p.reloadAll(ctx, operator)
	if err != nil {
		return nil, err
	}
	return pluginop.AwaitProbation(ctx, wait, tickets), nil
}

// Plugins returns the live version of every plugin operator.
func (p *Pipeline) Plugins() []PluginStatus {
	var out []PluginStatus
	for _, s := range p.pluginOps() {
		out = append(out, s.Status())
	}
	return out
}

// Promote makes the shadow plugin of the named operator its live version
// (see pluginop's shadow mode). It is safe to call while the pipeline runs.
func (p *Pipeline) Promote(ctx context.Context, operator string) error {
	for _, s := range p.pluginOps() {
		if s.Name() == operator {
			return s.Promote(ctx)
		}
	}
	return fmt.Errorf("%w: %q", ErrNoSuchPlugin, operator)
}
