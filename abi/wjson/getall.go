package wjson

import (
	"errors"
	"strconv"
)

// PathSet is a set of paths to look up together, in one pass over a
// document, with GetAll. It is immutable once made by NewPathSet and safe
// for concurrent use.
type PathSet struct {
	nodes []pathNode // nodes[0] is the root: the whole document
	n     int
}

// pathNode is a node of a PathSet's trie: the value reached by following
// the names of the nodes from the root.
type pathNode struct {
	name   string  // the member name that leads here from the parent
	target int     // the index of the path that ends here, or -1
	kids   []int32 // the nodes one name further
	under  []int   // the paths that end here or below
}

// NewPathSet returns the set of paths; path k's value is out[k] of
// GetAll. An empty path stands for the whole document. Two equal paths are
// an error.
func NewPathSet(paths ...[]string) (*PathSet, error) {
	s := &PathSet{nodes: []pathNode{{target: -1}}, n: len(paths)}
	for k, path := range paths {
		node := int32(0)
		s.nodes[0].under = append(s.nodes[0].under, k)
		for _, name := range path {
			node = s.child(node, name)
			s.nodes[node].under = append(s.nodes[node].under, k)
		}
		if t := s.nodes[node].target; t >= 0 {
			return nil, errors.New("wjson: paths " + strconv.Itoa(t) + " and " + strconv.Itoa(k) + " are equal")
		}
		s.nodes[node].target = k
	}
	return s, nil
}

// child returns the child of node named name, adding it if there is none.
func (s *PathSet) child(node int32, name string) int32 {
	for _, c := range s.nodes[node].kids {
		if s.nodes[c].name == name {
			return c
		}
	}
	c := int32(len(s.nodes))
	s.nodes = append(s.nodes, pathNode{name: name, target: -1})
	s.nodes[node].kids = append(s.nodes[node].kids, c)
	return c
}

// Len returns the number of paths.
func (s *PathSet) Len() int { return s.n }

// GetAll validates doc and sets out[k], for each path k of s, to what
// Get(doc, path k...) returns: the value found by following the path
// through nested objects (the last occurrence of a repeated name), or the
// zero Value when it leads nowhere. It reads doc once, whatever the number
// of paths, and does not allocate. On a malformed document it returns the
// *SyntaxError, and every out[k] is the zero Value. out must have room
// for s.Len() values.
func (s *PathSet) GetAll(doc []byte, out []Value) error {
	out = out[:s.n]
	clear(out)
	if s.nodes[0].target < 0 && s.getAllFast(doc, out) {
		return nil
	}
	clear(out)
	p := parser{buf: doc}
	i := p.ws(0)
	end, err := p.findAll(i, s, 0, out)
	if err == nil {
		err = p.eof(end)
	}
	if err != nil {
		clear(out)
	}
	return err
}

// findAll validates the value at i, which is node's, setting out for the
// paths that end at node or below it.
func (p *parser) findAll(i int, s *PathSet, node int32, out []Value) (int, error) {
	b := p.buf
	nd := &s.nodes[node]
	if len(nd.kids) == 0 || i >= len(b) || b[i] != '{' {
		k, end, plain, err := p.value(i)
		if err == nil && nd.target >= 0 {
			out[nd.target] = Value{Kind: k, Raw: b[i:end], Offset: i, plain: plain}
		}
		return end, err
	}
	end, err := p.findMembers(i, s, nd, out)
	if err == nil && nd.target >= 0 {
		out[nd.target] = Value{Kind: Object, Raw: b[i:end], Offset: i}
	}
	return end, err
}

// findMembers validates the object at i (a '{'), the value of nd, and
// follows the members named by nd's children.
func (p *parser) findMembers(i int, s *PathSet, nd *pathNode, out []Value) (int, error) {
	i, empty, err := p.open(i)
	if err != nil || empty {
		return i, err
	}
	for {
		kend, kplain, vstart, err := p.member(i)
		if err != nil {
			return vstart, err
		}
		var end int
		if c := s.match(nd, p.buf[i+1:kend-1], kplain); c >= 0 {
			for _, k := range s.nodes[c].under {
				out[k] = Value{}
			}
			end, err = p.findAll(vstart, s, c, out)
		} else {
			_, end, _, err = p.value(vstart)
		}
		if err != nil {
			return end, err
		}
		var done bool
		if i, done, err = p.next(end, '}', "object key:value pair"); err != nil || done {
			return i, err
		}
	}
}

// match returns the child of nd named by the member name key (the raw
// content between its quotes), or -1.
func (s *PathSet) match(nd *pathNode, key []byte, plain bool) int32 {
	for _, c := range nd.kids {
		name := s.nodes[c].name
		if plain && string(key) == name || !plain && keyEquals(key, name) {
			return c
		}
	}
	return -1
}
