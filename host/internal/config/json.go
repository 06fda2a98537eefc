package config

import (
	"math"
	"regexp"
	"strconv"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// jsonNumber matches a JSON number literal.
var jsonNumber = regexp.MustCompile(`^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$`)

// toJSON appends the compact JSON form of n to b, keeping mapping keys in
// document order. Values that JSON cannot express are reported at their
// position. When env is not "", a scalar under a mapping key can be
// overridden by the variable env_KEY (recursively through mappings, not
// through lists).
func (d *decoder) toJSON(b []byte, n *yaml.Node, path, env string) []byte {
	n = d.res(n)
	switch n.Kind {
	case yaml.MappingNode:
		b = append(b, '{')
		first := true
		d.entries(n, path, func(name string, _, v *yaml.Node) {
			if !first {
				b = append(b, ',')
			}
			first = false
			b = appendJSONString(b, name)
			b = append(b, ':')
			childEnv := ""
			if env != "" {
				childEnv = env + "_" + envNorm(name)
				if rv := d.res(v); rv.Kind == yaml.ScalarNode && d.env != nil {
					if s, ok := d.env(childEnv); ok && s != "" {
						v = envScalar(s)
						d.envPos[v] = childEnv
					}
				}
			}
			b = d.toJSON(b, v, joinPath(path, name), childEnv)
		})
		return append(b, '}')
	case yaml.SequenceNode:
		b = append(b, '[')
		for i, c := range n.Content {
			if i > 0 {
				b = append(b, ',')
			}
			b = d.toJSON(b, c, path+"["+strconv.Itoa(i)+"]", "")
		}
		return append(b, ']')
	case yaml.ScalarNode:
		return d.scalarJSON(b, n, path)
	}
	d.errorf(n, path, "unsupported YAML node")
	return append(b, "null"...)
}

func (d *decoder) scalarJSON(b []byte, n *yaml.Node, path string) []byte {
	switch tag := n.ShortTag(); tag {
	case "!!null":
		return append(b, "null"...)
	case "!!bool":
		var v bool
		if err := n.Decode(&v); err != nil {
			d.errorf(n, path, "invalid boolean %q", n.Value)
			return append(b, "null"...)
		}
		return strconv.AppendBool(b, v)
	case "!!int":
		var v any
		if err := n.Decode(&v); err != nil {
			d.errorf(n, path, "invalid integer %q", n.Value)
			return append(b, "null"...)
		}
		switch v := v.(type) {
		case int:
			return strconv.AppendInt(b, int64(v), 10)
		case int64:
			return strconv.AppendInt(b, v, 10)
		case uint64:
			return strconv.AppendUint(b, v, 10)
		case float64:
			return d.floatJSON(b, n, v, path)
		}
		d.errorf(n, path, "invalid integer %q", n.Value)
		return append(b, "null"...)
	case "!!float":
		if jsonNumber.MatchString(n.Value) {
			return append(b, n.Value...)
		}
		var v float64
		if err := n.Decode(&v); err != nil {
			d.errorf(n, path, "invalid number %q", n.Value)
			return append(b, "null"...)
		}
		return d.floatJSON(b, n, v, path)
	case "!!str", "!!timestamp", "!!binary":
		return appendJSONString(b, n.Value)
	default:
		d.errorf(n, path, "unsupported YAML tag %q", n.Tag)
		return append(b, "null"...)
	}
}

func (d *decoder) floatJSON(b []byte, n *yaml.Node, v float64, path string) []byte {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		d.errorf(n, path, "%s has no JSON equivalent", n.Value)
		return append(b, "null"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string, escaping only what JSON
// requires (plus U+2028 and U+2029) and replacing invalid UTF-8 with U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
