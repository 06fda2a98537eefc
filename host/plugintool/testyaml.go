package plugintool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// A YAML test file (weir-test.yaml) says the same as the JSON lines one,
// in objects rather than JSON strings:
//
//	op: map                  # map, flat_map, filter or aggregate
//	config: {field: name}    # the plugin's config
//	cases:
//	  - name: upper-cases the field
//	    key: k1              # optional: the record's key
//	    timestamp: 1000      # optional: its event time, ms since the epoch
//	    value: {name: ada}   # a mapping, list, number… is sent as JSON;
//	                         # a string is sent as it is
//	    want: [{name: ADA}]  # the values emitted, in order: JSON unless a
//	                         # string, which must match byte for byte
//	  - name: no field
//	    value: {n: 1}
//	    dead: 'field "name": missing'   # rejected with this message;
//	                                    # dead: true for any message
//	  - name: crashes
//	    value: boom
//	    trap: true           # the plugin fails on the record
//
// An aggregate's file gives the merged result of its cases (result:) and
// may give its group (group: {key: k, window: [start, end]}).

// yamlFile is the top level of a YAML test file.
type yamlFile struct {
	Op     string      `yaml:"op"`
	Config yaml.Node   `yaml:"config"`
	Group  *yamlGroup  `yaml:"group"`
	Result yaml.Node   `yaml:"result"`
	Cases  []yaml.Node `yaml:"cases"`
}

type yamlGroup struct {
	Key    *string `yaml:"key"`
	Window []int64 `yaml:"window"`
}

// yamlCaseKeys are the keys a case may have.
var yamlCaseKeys = []string{"name", "key", "value", "timestamp", "want", "dead", "trap"}

// yamlTopKeys are the keys of the top level.
var yamlTopKeys = []string{"op", "config", "group", "result", "cases"}

// ParseTestYAML reads a YAML plugin test file, naming the line of any
// problem.
func ParseTestYAML(r io.Reader) (*TestFile, error) {
	var doc yaml.Node
	if err := yaml.NewDecoder(r).Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty test file: want op: and cases:")
		}
		return nil, err
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: want a mapping with op: and cases:", doc.Line)
	}
	top := doc.Content[0]
	if err := checkKeys(top, yamlTopKeys, "the file"); err != nil {
		return nil, err
	}
	var y yamlFile
	if err := top.Decode(&y); err != nil {
		return nil, err
	}
	f, err := y.header(top.Line)
	if err != nil {
		return nil, err
	}
	for i := range y.Cases {
		c, err := parseYAMLCase(&y.Cases[i], i)
		if err != nil {
			return nil, err
		}
		f.Cases = append(f.Cases, c)
	}
	return f, nil
}

// header checks y's op, config, group and result and returns the TestFile
// they make, without its cases.
func (y *yamlFile) header(line int) (*TestFile, error) {
	if !slices.Contains(Ops, y.Op) {
		return nil, fmt.Errorf("line %d: op %q: want one of %s", line, y.Op, strings.Join(Ops, ", "))
	}
	f := &TestFile{Op: y.Op}
	if y.Config.Kind != 0 {
		b, _, err := yamlJSON(&y.Config)
		if err != nil {
			return nil, fmt.Errorf("line %d: config: %w", y.Config.Line, err)
		}
		f.Config = b
	}
	if y.Op != "aggregate" {
		if y.Group != nil || y.Result.Kind != 0 {
			return nil, fmt.Errorf("line %d: group: and result: are for aggregate tests only", line)
		}
		return f, nil
	}
	if y.Result.Kind == 0 {
		return nil, fmt.Errorf("line %d: an aggregate test needs result:, the result of its cases", line)
	}
	want, asJSON, err := yamlWant(&y.Result)
	if err != nil {
		return nil, fmt.Errorf("line %d: result: %w", y.Result.Line, err)
	}
	f.Result, f.ResultAsJSON, f.ResultLine = &want, asJSON, y.Result.Line
	if g := y.Group; g != nil {
		f.Key, f.Window = g.Key, g.Window
		if w := g.Window; w != nil && (len(w) != 2 || w[0] > w[1]) {
			return nil, fmt.Errorf("line %d: group: window: want [start, end] with start <= end", line)
		}
	}
	return f, nil
}

// parseYAMLCase turns the i'th case into a Case.
func parseYAMLCase(n *yaml.Node, i int) (Case, error) {
	c := Case{Line: n.Line, Name: fmt.Sprintf("case %d", i+1)}
	if n.Kind != yaml.MappingNode {
		return c, fmt.Errorf("line %d: a case is a mapping with value: and want:, dead: or trap:", n.Line)
	}
	if err := checkKeys(n, yamlCaseKeys, "a case"); err != nil {
		return c, err
	}
	var seen []string
	for k := 0; k+1 < len(n.Content); k += 2 {
		key, v := n.Content[k].Value, n.Content[k+1]
		seen = append(seen, key)
		if err := c.set(key, v); err != nil {
			return c, fmt.Errorf("line %d: %s: %s: %w", v.Line, c.Name, key, err)
		}
	}
	outcomes := 0
	for _, k := range []string{"want", "dead", "trap"} {
		if slices.Contains(seen, k) {
			outcomes++
		}
	}
	if outcomes != 1 {
		return c, fmt.Errorf("line %d: %s: want exactly one of want:, dead: and trap:", n.Line, c.Name)
	}
	if c.Want == nil {
		c.Want = []string{}
	}
	return c, nil
}

// set sets the case's field key from v.
func (c *Case) set(key string, v *yaml.Node) error {
	switch key {
	case "name":
		c.Name = fmt.Sprintf("%q", v.Value)
	case "key":
		var s string
		if err := v.Decode(&s); err != nil {
			return err
		}
		c.Key = &s
	case "timestamp":
		return v.Decode(&c.Timestamp)
	case "value":
		b, _, err := yamlJSON(v)
		c.Value = string(b)
		return err
	case "want":
		if v.Kind != yaml.SequenceNode {
			return errors.New("want a list of values ([] for none)")
		}
		for _, item := range v.Content {
			w, asJSON, err := yamlWant(item)
			if err != nil {
				return err
			}
			c.Want, c.AsJSON = append(c.Want, w), append(c.AsJSON, asJSON)
		}
	case "dead":
		var any bool
		if v.Tag == "!!bool" {
			if err := v.Decode(&any); err != nil || !any {
				return errors.New("want the message, or true for any message")
			}
			c.Want = []string{"error:"}
			return nil
		}
		c.Want = []string{"error: " + v.Value}
	case "trap":
		var trap bool
		if err := v.Decode(&trap); err != nil || !trap {
			return errors.New("want true")
		}
		c.Want = []string{"trap"}
	}
	return nil
}

// checkKeys fails on a key of the mapping n that is not in allowed.
func checkKeys(n *yaml.Node, allowed []string, what string) error {
	for k := 0; k+1 < len(n.Content); k += 2 {
		key := n.Content[k]
		if !slices.Contains(allowed, key.Value) {
			return fmt.Errorf("line %d: %s: unknown key %q (want %s)", key.Line, what, key.Value, strings.Join(allowed, ", "))
		}
	}
	return nil
}

// yamlJSON returns the bytes a value node stands for: a string's text as
// it is, anything else encoded as JSON; and whether it was JSON.
func yamlJSON(n *yaml.Node) ([]byte, bool, error) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!str" {
		return []byte(n.Value), false, nil
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, false, err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, false, err
	}
	return b, true, nil
}

// yamlWant returns a wanted value: a string as it is, anything else as
// canonical JSON, and whether it is JSON.
func yamlWant(n *yaml.Node) (string, bool, error) {
	b, asJSON, err := yamlJSON(n)
	if err != nil || !asJSON {
		return string(b), false, err
	}
	canon, err := canonicalJSON(b)
	return canon, true, err
}

// canonicalJSON re-encodes a JSON value compactly, with object keys
// sorted and numbers as float64, so that equal values compare equal.
func canonicalJSON(b []byte) (string, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&v); err != nil {
		return "", err
	}
	if dec.More() {
		return "", errors.New("more than one JSON value")
	}
	out, err := json.Marshal(v)
	return string(out), err
}
