package pluginconfig

import (
	"bytes"
	"fmt"

	"github.com/weir-stream/weir/abi/wjson"
)

// String returns the string field name of the JSON object config, or def
// when config is empty (only whitespace), null, not an object, or lacks the
// field or has it null. A field of another kind, or malformed JSON, is an
// error.
func String(config []byte, name, def string) (string, error) {
	if len(bytes.TrimSpace(config)) == 0 {
		return def, nil
	}
	v, err := wjson.Get(config, name)
	if err != nil {
		return "", fmt.Errorf("config: %w", err)
	}
	switch v.Kind {
	case wjson.Invalid, wjson.Null:
		return def, nil
	case wjson.String:
		return v.String(), nil
	}
	return "", fmt.Errorf("config: field %s must be a string, not %v", name, v.Kind)
}
