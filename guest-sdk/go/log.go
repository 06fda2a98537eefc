package weir

import (
	"fmt"
	"strconv"

	"github.com/weir-stream/weir/abi"
)

// LogLevel is the severity of a log line. It is a plain value.
type LogLevel int32

// The log levels of abi.ImportLog.
const (
	LevelDebug = LogLevel(abi.LogDebug)
	LevelInfo  = LogLevel(abi.LogInfo)
	LevelWarn  = LogLevel(abi.LogWarn)
	LevelError = LogLevel(abi.LogError)
)

// String returns the level's name, such as "info".
func (l LogLevel) String() string {
	switch l {
	case LevelDebug:
		return "debug"
	case LevelInfo:
		return "info"
	case LevelWarn:
		return "warn"
	case LevelError:
		return "error"
	}
	return "level(" + strconv.Itoa(int(l)) + ")"
}

// Log writes msg to the host's log at the given level. The host truncates
// lines longer than abi.MaxLogLine bytes and drops lines beyond its rate
// limit. Log may be called from any registered function, including Init.
func Log(level LogLevel, msg string) {
	host.log(int32(level), msg)
}

// Logf is Log with the message formatted by fmt.Sprintf.
func Logf(level LogLevel, format string, args ...any) {
	host.log(int32(level), fmt.Sprintf(format, args...))
}
