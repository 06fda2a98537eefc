package config

import (
	"os"
	"strings"
)

// EnvPrefix is the prefix of every environment variable that overrides a
// pipeline field.
const EnvPrefix = "WEIR"

// EnvName returns the environment variable that overrides the field at the
// given path, where list items are named by their name field:
//
//	EnvName("engine", "batch_size")        == "WEIR_ENGINE_BATCH_SIZE"
//	EnvName("operators", "by-id", "field") == "WEIR_OPERATORS_BY_ID_FIELD"
//
// Each part is uppercased and every character other than an ASCII letter or
// digit becomes '_'.
func EnvName(parts ...string) string {
	var b strings.Builder
	b.WriteString(EnvPrefix)
	for _, p := range parts {
		b.WriteByte('_')
		b.WriteString(envNorm(p))
	}
	return b.String()
}

// envNorm uppercases s and replaces each character other than an ASCII
// letter or digit (counting a multi-byte character once) with '_'.
func envNorm(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z':
			b.WriteRune(r - 'a' + 'A')
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// OSEnv returns an environment lookup for Parse that reads the process
// environment. It takes full variable names such as
// "WEIR_ENGINE_BATCH_SIZE", only ones with the prefix EnvPrefix and '_',
// and treats a variable that is set but empty as unset. Load uses it.
//
// The part of the name after the prefix is normalized, as by EnvName
// (which leaves its own names unchanged), after lowercasing: so
// "WEIR_engine_batch-size" reads WEIR_ENGINE_BATCH_SIZE.
func OSEnv() func(name string) (string, bool) {
	return func(name string) (string, bool) {
		key, ok := strings.CutPrefix(name, EnvPrefix+"_")
		if !ok || key == "" {
			return "", false
		}
		v, ok := os.LookupEnv(EnvPrefix + "_" + envNorm(strings.ToUpper(strings.ToLower(key))))
		return v, ok && v != ""
	}
}
