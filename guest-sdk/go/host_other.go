//go:build !wasip1

package weir

import (
	"os"

	"github.com/weir-stream/weir/abi"
)

// defaultHost stands in for the host in native builds, which exist for unit
// tests: logs go to standard error, and every state call fails with
// abi.StatusNoContext, as it would outside a batch call.
type defaultHost struct{}

func (defaultHost) log(level int32, msg string) {
	os.Stderr.WriteString("weir: " + LogLevel(level).String() + ": " + msg + "\n")
}

func (defaultHost) stateGet(uint32, []byte, []byte) int32 { return abi.StatusNoContext }
func (defaultHost) statePut(uint32, []byte, []byte) int32 { return abi.StatusNoContext }
func (defaultHost) stateDelete(uint32, []byte) int32      { return abi.StatusNoContext }
