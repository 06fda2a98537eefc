package pluginconfig

import "testing"

func TestString(t *testing.T) {
	tests := []struct {
		name, config, want string
		wantErr            bool
	}{
		{"empty config", "", "def", false},
		{"whitespace config", " \n", "def", false},
		{"null config", "null", "def", false},
		{"array config", "[1]", "def", false},
		{"missing field", `{"other":"x"}`, "def", false},
		{"null field", `{"field":null}`, "def", false},
		{"field", `{"field":"n\u00e4me"}`, "näme", false},
		{"empty string field", `{"field":""}`, "", false},
		{"number field", `{"field":1}`, "", true},
		{"malformed", `{"field":`, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := String([]byte(tc.config), "field", "def")
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("String = %q, %v; want %q, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}
