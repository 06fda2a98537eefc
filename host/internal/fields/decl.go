package fields

import (
	"strings"

	"github.com/weir-stream/weir/abi"
	"github.com/weir-stream/weir/abi/wjson"
)

// Decl is a checked field declaration, its paths compiled for extraction.
// It is immutable once made and safe for concurrent use; any number of
// Extractors may share it.
type Decl struct {
	fields []abi.FieldDecl
	paths  *wjson.PathSet
	// quoted[k] is field k's path quoted for reasons: "user.age".
	quoted []string
	// topLevel[k]: field k's path is one member name, spelled as it is
	// (no '.', no escapes).
	topLevel []bool
}

// Compile checks the declaration frame a module's abi.ExportFields
// returned and compiles it. Its errors are abi.ParseFieldDecls's: a
// *abi.FrameError for broken framing, a *abi.DeclError naming the field's
// index and path for a field that breaks a rule.
func Compile(frame []byte) (*Decl, error) {
	fields, err := abi.ParseFieldDecls(frame)
	if err != nil {
		return nil, err
	}
	segs := make([][]string, len(fields))
	quoted := make([]string, len(fields))
	topLevel := make([]bool, len(fields))
	for k, f := range fields {
		topLevel[k] = !strings.ContainsAny(f.Path, `.\`)
		// ParseFieldDecls checked the paths and that no two are equal.
		segs[k], _ = abi.SplitPath(f.Path)
		quoted[k] = string(wjson.AppendQuote(nil, f.Path))
	}
	paths, err := wjson.NewPathSet(segs...)
	if err != nil {
		return nil, err
	}
	return &Decl{fields: fields, paths: paths, quoted: quoted, topLevel: topLevel}, nil
}

// NewDecl checks and compiles fields, as Compile does their frame.
func NewDecl(fields ...abi.FieldDecl) (*Decl, error) {
	return Compile(abi.AppendFieldDecls(nil, fields))
}

// Len returns the number of declared fields.
func (d *Decl) Len() int { return len(d.fields) }

// Field returns declared field k.
func (d *Decl) Field(k int) abi.FieldDecl { return d.fields[k] }

// index returns the field whose path is path, spelled as declared, or -1.
func (d *Decl) index(path []byte) int {
	for k := range d.fields {
		if d.fields[k].Path == string(path) {
			return k
		}
	}
	return -1
}
