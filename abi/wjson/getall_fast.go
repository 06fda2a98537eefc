package wjson

// GetAll's fast path: the common document, an object whose member names
// have no escapes, read member by member in one loop, with string content
// scanned eight bytes at a time (plainRun). A member on a path with more
// names is followed by the full parser's findAll; containers off the
// paths are validated by its value. Anything else (escapes in a name, a
// syntax error, another top-level value) makes getAllFast report false,
// and GetAll reads the document again with the full parser, which gives
// the same values and the exact error.

// getAllFast sets out as GetAll does and reports whether it could: false
// leaves out to be cleared. doc's top-level value must be the root of s,
// which must not be a target itself.
func (s *PathSet) getAllFast(doc []byte, out []Value) bool {
	b, n := doc, len(doc)
	i := skipWS(b, 0)
	if i >= n || b[i] != '{' {
		return false
	}
	p := parser{buf: doc, depth: 1}
	i = skipWS(b, i+1)
	if i < n && b[i] == '}' {
		return skipWS(b, i+1) == n
	}
	for {
		if i >= n || b[i] != '"' {
			return false
		}
		ks := i
		var hi uint64
		if i, hi = plainRun(b, i+1, 0); i >= n || b[i] != '"' {
			return false // an escape in the name, or the end of doc
		}
		c := s.match(&s.nodes[0], b[ks+1:i], hi&swarHigh == 0)
		if i = skipWS(b, i+1); i >= n || b[i] != ':' {
			return false
		}
		var ok bool
		if i, ok = s.fastMember(&p, skipWS(b, i+1), c, out); !ok {
			return false
		}
		if i = skipWS(b, i); i >= n {
			return false
		}
		switch b[i] {
		case ',':
			i = skipWS(b, i+1)
		case '}':
			return skipWS(b, i+1) == n
		default:
			return false
		}
	}
}

// fastMember reads the value at i of a top-level member whose name is
// node c (or -1 for a name on no path), setting out for the paths it
// ends, and returns where the value ends.
func (s *PathSet) fastMember(p *parser, i int, c int32, out []Value) (int, bool) {
	if c >= 0 && len(s.nodes[c].kids) > 0 {
		for _, k := range s.nodes[c].under {
			out[k] = Value{}
		}
		end, err := p.findAll(i, s, c, out)
		return end, err == nil
	}
	k, end, plain, ok := p.fastValue(i)
	if ok && c >= 0 {
		out[s.nodes[c].target] = Value{Kind: k, Raw: p.buf[i:end], Offset: i, plain: plain}
	}
	return end, ok
}

// fastValue reads the value at i: strings with plainRun, other values with
// the full parser's readers.
func (p *parser) fastValue(i int) (Kind, int, bool, bool) {
	b := p.buf
	if i < len(b) && b[i] == '"' {
		end, hi := plainRun(b, i+1, 0)
		if end < len(b) && b[end] == '"' {
			return String, end + 1, hi&swarHigh == 0, true
		}
		end, plain, err := p.str(i) // an escape, a control character or the end
		return String, end, plain, err == nil
	}
	k, end, plain, err := p.value(i)
	return k, end, plain, err == nil
}
