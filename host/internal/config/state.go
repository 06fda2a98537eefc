package config

import (
	"os"
	"path/filepath"
)

// State backends.
const (
	StateMemory = "memory" // in memory; lost when weir stops (default)
	StateBadger = "badger" // on disk with badger, under State.Dir; survives restarts
)

// State says where keyed state (plugin state, windows) is kept.
type State struct {
	Meta
	Backend string // StateMemory (default) or StateBadger
	Dir     string // badger: absolute directory; created if missing, its parent must exist
}

var stateFields = []string{"backend", "dir"}

// state decodes the optional top-level state block.
func (d *decoder) state(parent *object) State {
	st := State{Backend: StateMemory}
	o, _ := d.subBlock(parent, "state", &st.Meta)
	if o == nil {
		return st
	}
	if b, bst := o.enum("backend", StateMemory, StateBadger); bst == good {
		st.Backend = b
	}
	if p, v, pst := o.strNode("dir"); pst == good && p != "" {
		st.Dir = d.abs(p)
		if fi, err := os.Stat(filepath.Dir(st.Dir)); err != nil || !fi.IsDir() {
			o.fail("dir", v, "the directory containing %q does not exist", p)
		}
	}
	switch {
	case st.Backend == StateBadger && st.Dir == "":
		o.missingf("the badger backend needs a %q", "dir")
	case st.Backend == StateMemory && st.Dir != "":
		o.fail("dir", o.get("dir", kString), "only applies to the badger backend")
	}
	o.finish(stateFields, stateFields, "")
	return st
}
