package config

import "testing"

// TestOSEnv checks OSEnv's lookup of the process environment.
func TestOSEnv(t *testing.T) {
	t.Setenv("WEIR_ENGINE_BATCH_SIZE", "64")
	t.Setenv("WEIR_EMPTY", "")
	t.Setenv("WEIR_K", "kelvin")
	t.Setenv("OTHER_X", "x")
	t.Setenv("WEIR_", "bare")
	tests := []struct {
		name, lookup string
		want         string
		ok           bool
	}{
		{"set", "WEIR_ENGINE_BATCH_SIZE", "64", true},
		{"unset", "WEIR_ENGINE_QUEUE_DEPTH", "", false},
		{"set but empty counts as unset", "WEIR_EMPTY", "", false},
		{"lowercase name", "WEIR_engine_batch_size", "64", true},
		{"punctuation normalized", "WEIR_ENGINE-BATCH.SIZE", "64", true},
		{"lowercases to ASCII", "WEIR_\u212a", "kelvin", true}, // KELVIN SIGN
		{"other prefix", "OTHER_X", "", false},
		{"prefix without underscore", "WEIRENGINE_BATCH_SIZE", "", false},
		{"prefix alone", "WEIR_", "", false},
		{"empty name", "", "", false},
	}
	lookup := OSEnv()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, ok := lookup(tt.lookup); got != tt.want || ok != tt.ok {
				t.Errorf("OSEnv()(%q) = %q, %v, want %q, %v", tt.lookup, got, ok, tt.want, tt.ok)
			}
		})
	}
}
