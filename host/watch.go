package host

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// watchDebounce is how long the plugin watcher waits after the last change
// to a plugin before reloading it: editors and builds write several times.
const watchDebounce = 300 * time.Millisecond

// watchPlugins reloads each plugin operator whose module file, or Go
// source folder, changes, until ctx is done. A plugin that fails to
// reload keeps its live version (see pluginSlot.reload). It returns once
// the watcher is set up; problems setting it up are logged, not fatal.
func (p *Pipeline) watchPlugins(ctx context.Context) {
	var slots []*pluginSlot
	for _, s := range p.slots {
		if s != nil {
			slots = append(slots, s)
		}
	}
	if len(slots) == 0 {
		return
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		p.opts.Logger.Warn("plugins will not reload on change: cannot watch files", "error", err)
		return
	}
	// owners maps a watched path (a module file, or a folder of Go
	// source) to the slots whose plugin it is.
	owners := map[string][]*pluginSlot{}
	for _, s := range slots {
		path := s.op.Plugin
		fi, err := os.Stat(path)
		if err != nil {
			continue
		}
		dirs := []string{filepath.Dir(path)} // editors replace files: watch the folder
		if fi.IsDir() {
			dirs = nil
			filepath.WalkDir(path, func(d string, e fs.DirEntry, err error) error {
				if err == nil && e.IsDir() {
					if name := e.Name(); d != path && (strings.HasPrefix(name, ".") || name == "testdata") {
						return filepath.SkipDir
					}
					dirs = append(dirs, d)
				}
				return nil
			})
		}
		for _, d := range dirs {
			if err := w.Add(d); err != nil {
				p.opts.Logger.Warn("plugin will not reload on change: cannot watch", "operator", s.op.Name, "path", d, "error", err)
			}
		}
		owners[path] = append(owners[path], s)
	}
	p.opts.Logger.Debug("watching plugins for changes", "pipeline", p.cfg.Name, "plugins", len(owners))
	go func() {
		defer w.Close()
		due := map[*pluginSlot]time.Time{}
		tick := time.NewTicker(watchDebounce / 3)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if ev.Op == fsnotify.Chmod {
					continue
				}
				for path, ss := range owners {
					if ev.Name == path || strings.HasPrefix(ev.Name, path+string(filepath.Separator)) {
						for _, s := range ss {
							due[s] = time.Now().Add(watchDebounce)
						}
					}
				}
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				p.opts.Logger.Warn("watching plugins", "error", err)
			case now := <-tick.C:
				for s, at := range due {
					if now.After(at) {
						delete(due, s)
						s.log.Info("plugin changed on disk; reloading", "path", s.op.Plugin)
						s.reload(ctx) // logs its own outcome
					}
				}
			}
		}
	}()
}
