package config

import (
	"strings"

	"github.com/spf13/viper"
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

// envReplacer is viper's env key replacer: it maps a viper key (already
// prefixed and uppercased by viper) to the variable name EnvName produces.
type envReplacer struct{}

// Replace implements viper.StringReplacer.
func (envReplacer) Replace(s string) string { return envNorm(s) }

// OSEnv returns an environment lookup for Parse that reads the process
// environment through viper (prefix WEIR, AutomaticEnv). It takes full
// variable names such as "WEIR_ENGINE_BATCH_SIZE" and, like viper by default,
// treats a variable that is set but empty as unset. Load uses it.
func OSEnv() func(name string) (string, bool) {
	// viper.EnvKeyReplacer is the option form of SetEnvKeyReplacer that
	// takes any StringReplacer rather than a *strings.Replacer.
	v := viper.NewWithOptions(viper.EnvKeyReplacer(envReplacer{}))
	v.SetEnvPrefix(EnvPrefix)
	v.AutomaticEnv()
	return func(name string) (string, bool) {
		key, ok := strings.CutPrefix(name, EnvPrefix+"_")
		if !ok || key == "" {
			return "", false
		}
		// The key has no '.', so viper treats it as flat; it prefixes
		// "WEIR_", uppercases and applies envReplacer to get back name.
		key = strings.ToLower(key)
		if !v.IsSet(key) {
			return "", false
		}
		return v.GetString(key), true
	}
}
