package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/weir-stream/weir/host"
)

// Exit codes; documented above and in the README.
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
	exitConfig = 3
	exitPlugin = 4
	exitForced = 130
)

func main() {
	root := newRootCmd()
	err := root.Execute()
	if err != nil {
		fmt.Fprintf(os.Stderr, "weir: %v\n", err)
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintln(os.Stderr, "Run 'weir --help' for usage.")
		}
	}
	os.Exit(exitCode(err))
}

func exitCode(err error) int {
	var ue usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue):
		return exitUsage
	case errors.Is(err, host.ErrConfig):
		return exitConfig
	case errors.Is(err, host.ErrPlugin):
		return exitPlugin
	}
	return exitFailed
}

// usageError marks a command-line mistake.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}
