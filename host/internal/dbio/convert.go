package dbio

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/weir-stream/weir/abi/wjson"
)

// param converts a JSON value to a SQL parameter: a string to its decoded
// text, an integer number (no fraction or exponent, within int64) to int64,
// any other number to float64, a bool to bool, null to nil (NULL), and an
// object or array to its JSON text. A number beyond the range of float64
// is an error.
func param(v wjson.Value) (any, error) {
	switch v.Kind {
	case wjson.String:
		return v.String(), nil
	case wjson.Number:
		if i, err := v.Int(); err == nil {
			return i, nil
		}
		f, err := v.Float()
		if err != nil {
			return nil, fmt.Errorf("number %s is out of range", v.Raw)
		}
		return f, nil
	case wjson.Bool:
		b, _ := v.Bool()
		return b, nil
	case wjson.Null:
		return nil, nil
	case wjson.Object, wjson.Array:
		return string(v.Raw), nil
	}
	return nil, errors.New("no value")
}

// colKind says how a result column's values are written as JSON, beyond
// what their Go type says.
type colKind uint8

const (
	colPlain colKind = iota
	// colNumeric is DECIMAL/NUMERIC, and integers (MySQL gives a BIGINT
	// UNSIGNED beyond int64 as text): text that is a JSON number is
	// written as one.
	colNumeric
	colJSON // JSON/JSONB: text that is JSON is written as it is
)

// kindOf returns the colKind for a column's database type name, as
// database/sql's ColumnType.DatabaseTypeName reports it.
func kindOf(typeName string) colKind {
	switch {
	case typeName == "DECIMAL" || typeName == "NUMERIC" || strings.Contains(typeName, "INT"):
		return colNumeric
	case typeName == "JSON" || typeName == "JSONB":
		return colJSON
	}
	return colPlain
}

// appendColumn appends the JSON for a column value as database/sql scans it
// into an any: nil → null; strings and []byte → a JSON string (but the text
// of a DECIMAL/NUMERIC or integer column → that number, and of a JSON
// column → that JSON, when it is valid); integers → a number; floats → the shortest number that
// reads back (strconv's 'g', -1), NaN and ±Inf → null; bool → true/false;
// time.Time → an RFC 3339 string in UTC (with fractional seconds when it
// has them); anything else → its fmt.Sprint text as a JSON string.
func appendColumn(b []byte, kind colKind, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case string:
		return appendText(b, kind, x)
	case []byte:
		return appendText(b, kind, string(x))
	case int64:
		return strconv.AppendInt(b, x, 10)
	case int32:
		return strconv.AppendInt(b, int64(x), 10)
	case int16:
		return strconv.AppendInt(b, int64(x), 10)
	case int8:
		return strconv.AppendInt(b, int64(x), 10)
	case int:
		return strconv.AppendInt(b, int64(x), 10)
	case uint64:
		return strconv.AppendUint(b, x, 10)
	case uint32:
		return strconv.AppendUint(b, uint64(x), 10)
	case uint16:
		return strconv.AppendUint(b, uint64(x), 10)
	case uint8:
		return strconv.AppendUint(b, uint64(x), 10)
	case uint:
		return strconv.AppendUint(b, uint64(x), 10)
	case float64:
		return appendFloat(b, x, 64)
	case float32:
		return appendFloat(b, float64(x), 32)
	case bool:
		return strconv.AppendBool(b, x)
	case time.Time:
		return wjson.AppendQuote(b, x.UTC().Format(time.RFC3339Nano))
	}
	return wjson.AppendQuote(b, fmt.Sprint(v))
}

func appendFloat(b []byte, f float64, bits int) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, bits)
}

// appendText appends a text column value: a JSON number or JSON document
// as it stands for those kinds of column, else a JSON string.
func appendText(b []byte, kind colKind, s string) []byte {
	switch kind {
	case colNumeric:
		if v, err := wjson.Parse([]byte(s)); err == nil && v.Kind == wjson.Number {
			return append(b, v.Raw...)
		}
		if s == "NaN" || s == "Infinity" || s == "-Infinity" {
			return append(b, "null"...)
		}
	case colJSON:
		if v, err := wjson.Parse([]byte(s)); err == nil {
			return append(b, v.Raw...)
		}
	}
	return wjson.AppendQuote(b, s)
}
