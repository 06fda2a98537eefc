package dbio

import (
	"strconv"
	"strings"
)

// placeholders returns the byte offsets of the parameter markers of query,
// as driver's SQL dialect reads it: each '?' outside string literals, quoted
// identifiers and comments. It understands '...' strings, where a doubled
// quote stands for itself (and a backslash escapes for MySQL, and in
// PostgreSQL's E'...' strings); "..." (a MySQL string with backslash
// escapes, a PostgreSQL identifier); MySQL's `...` identifiers;
// PostgreSQL's $tag$...$tag$ strings; -- and /* */ comments (nested for
// PostgreSQL; MySQL's -- needs a space after it) and MySQL's # comments. An
// unterminated literal or comment runs to the end of the query.
// PostgreSQL's JSON operators ?, ?| and ?& cannot be written: their '?' is
// a marker. A $1 written in the query is left as it is, and not counted.
func placeholders(driver, query string) []int {
	my := driver == MySQL
	var at []int
	n := len(query)
	for i := 0; i < n; {
		c := query[i]
		switch {
		case c == '?':
			at = append(at, i)
			i++
		case c == '\'':
			// PostgreSQL's E'...' strings take backslash escapes.
			esc := my || (i > 0 && (query[i-1] == 'E' || query[i-1] == 'e') && (i < 2 || !identChar(query[i-2])))
			i = skipQuoted(query, i, '\'', esc)
		case c == '"':
			i = skipQuoted(query, i, '"', my)
		case c == '`' && my:
			i = skipQuoted(query, i, '`', false)
		case c == '-' && i+1 < n && query[i+1] == '-' && (!my || i+2 == n || query[i+2] <= ' '):
			i = skipLine(query, i)
		case c == '#' && my:
			i = skipLine(query, i)
		case c == '/' && i+1 < n && query[i+1] == '*':
			i = skipBlockComment(query, i, !my)
		case c == '$' && !my && (i == 0 || !identChar(query[i-1])):
			i = skipDollar(query, i)
		default:
			i++
		}
	}
	return at
}

// skipQuoted returns the offset after the literal opened by the quote at i:
// a doubled quote stands for itself, and with esc a backslash escapes the
// next byte.
func skipQuoted(q string, i int, quote byte, esc bool) int {
	for i++; i < len(q); i++ {
		switch q[i] {
		case '\\':
			if esc {
				i++
			}
		case quote:
			if i+1 < len(q) && q[i+1] == quote {
				i++
				continue
			}
			return i + 1
		}
	}
	return len(q)
}

// skipLine returns the offset after the end of the line holding i.
func skipLine(q string, i int) int {
	if j := strings.IndexByte(q[i:], '\n'); j >= 0 {
		return i + j + 1
	}
	return len(q)
}

// skipBlockComment returns the offset after the /* comment at i, counting
// nested comments when nest is set.
func skipBlockComment(q string, i int, nest bool) int {
	depth := 0
	for i < len(q) {
		switch {
		case strings.HasPrefix(q[i:], "/*") && (nest || depth == 0):
			depth++
			i += 2
		case strings.HasPrefix(q[i:], "*/"):
			depth--
			i += 2
			if depth == 0 {
				return i
			}
		default:
			i++
		}
	}
	return len(q)
}

// skipDollar returns the offset after the PostgreSQL dollar-quoted string
// $tag$...$tag$ at i, or i+1 when the '$' at i does not open one (it is a
// $1 marker, say).
func skipDollar(q string, i int) int {
	j := i + 1
	for j < len(q) && q[j] != '$' && identChar(q[j]) && !(j == i+1 && q[j] >= '0' && q[j] <= '9') {
		j++
	}
	if j >= len(q) || q[j] != '$' {
		return i + 1
	}
	tag := q[i : j+1]
	if k := strings.Index(q[j+1:], tag); k >= 0 {
		return j + 1 + k + len(tag)
	}
	return len(q)
}

// identChar reports whether c may be part of an unquoted identifier.
func identChar(c byte) bool {
	return c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// rewritePlaceholders returns query for driver, with the parameter markers
// at (from placeholders) written as $1, $2, ... for PostgreSQL, and as they
// are (?) for MySQL.
func rewritePlaceholders(driver, query string, at []int) string {
	if driver != Postgres || len(at) == 0 {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 2*len(at))
	last := 0
	for k, i := range at {
		b.WriteString(query[last:i])
		b.WriteByte('$')
		b.WriteString(strconv.Itoa(k + 1))
		last = i + 1
	}
	b.WriteString(query[last:])
	return b.String()
}
