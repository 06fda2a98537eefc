package wasm

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error this package returns about a module is an
// *Error that wraps exactly one of these, so callers (the CLI, mapping
// failures to exit codes) can test with errors.Is.
var (
	// ErrInvalidModule means the module is not one weir can run: not Wasm,
	// not a weir ABI v1 module, a missing or mistyped export, an import weir
	// does not provide, or no memory.
	ErrInvalidModule = errors.New("invalid plugin module")
	// ErrABIVersion means the module speaks a weir ABI version other than
	// the one this host implements. It wraps ErrInvalidModule.
	ErrABIVersion = fmt.Errorf("%w: unsupported weir ABI version", ErrInvalidModule)
	// ErrInit means the module's weir_init rejected its config, or the
	// module trapped while initialising.
	ErrInit = errors.New("plugin initialisation failed")
	// ErrInstantiate means wazero could not instantiate the module, for
	// example because its memory exceeds the configured limit. During trap
	// recovery this is fatal: the worker cannot continue.
	ErrInstantiate = errors.New("plugin instantiation failed")
	// ErrState means the state store failed during a batch call. The batch
	// had no effect on state, and the error is fatal for the pipeline.
	ErrState = errors.New("state store failed")
	// ErrConfig means the PluginConfig itself is unusable (no operator
	// name, an unknown Op, a memory limit over 4 GiB).
	ErrConfig = errors.New("invalid plugin config")
	// ErrClosed means the Runtime, Plugin or Worker was closed.
	ErrClosed = errors.New("closed")
)

// Error is an error about one operator's module. Its message names the
// operator and where the module came from, then says what is wrong:
//
//	operator "detect" (plugins/x.wasm): not a weir ABI v1 module: missing export weir_abi_v1
type Error struct {
	Operator string // the operator name from the pipeline
	Path     string // where the module came from; may be empty
	// Kind is the sentinel this error is an instance of (ErrInvalidModule,
	// ErrInit, ...).
	Kind error
	// Msg says what is wrong, as a phrase that follows the operator.
	Msg string
	// Err is the underlying cause, when there is one.
	Err error
}

func (e *Error) Error() string {
	var s string
	switch {
	case e.Operator != "" && e.Path != "":
		s = fmt.Sprintf("operator %q (%s): ", e.Operator, e.Path)
	case e.Operator != "":
		s = fmt.Sprintf("operator %q: ", e.Operator)
	case e.Path != "":
		s = e.Path + ": "
	}
	s += e.Msg
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the sentinel kind and the cause, so that errors.Is matches
// either.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

// errorf builds an *Error for the plugin described by cfg.
func (cfg *PluginConfig) errorf(kind, cause error, format string, args ...any) *Error {
	return &Error{
		Operator: cfg.Operator,
		Path:     cfg.Path,
		Kind:     kind,
		Msg:      fmt.Sprintf(format, args...),
		Err:      cause,
	}
}
