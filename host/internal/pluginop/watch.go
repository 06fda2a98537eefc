package pluginop

import (
	"context"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// watchDebounce is how long the plugin watcher waits after the last change
// to a plugin before reloading it: editors and builds write several times.
const watchDebounce = 300 * time.Millisecond

// Watch reloads each plugin operator whose module file, or Go
// source folder, changes, until ctx is done. It follows each operator's
// live path: after `weir plugin promote` that is the promoted shadow's. A
// plugin that fails to reload keeps its live version (see
// Operator.reload). It returns once the watcher is set up; problems
// setting it up are logged, not fatal.
func Watch(ctx context.Context, slots []*Operator, log *slog.Logger) {
	if len(slots) == 0 {
		return
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		log.Warn("plugins will not reload on change: cannot watch files", "error", err)
		return
	}
	w := &pluginWatcher{log: log, w: fw, watched: map[*Operator]string{}}
	for _, s := range slots {
		w.follow(s)
	}
	log.Debug("watching plugins for changes", "pipeline", slots[0].env.Pipeline, "plugins", len(slots))
	go func() {
		defer fw.Close()
		due := map[*Operator]time.Time{}
		tick := time.NewTicker(watchDebounce / 3)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-fw.Events:
				if !ok {
					return
				}
				if ev.Op == fsnotify.Chmod {
					continue
				}
				for _, s := range slots {
					w.follow(s) // a promotion moves the live path
				}
				for s, path := range w.watched {
					if ev.Name == path || strings.HasPrefix(ev.Name, path+string(filepath.Separator)) {
						due[s] = time.Now().Add(watchDebounce)
					}
				}
			case err, ok := <-fw.Errors:
				if !ok {
					return
				}
				log.Warn("watching plugins", "error", err)
			case now := <-tick.C:
				for _, s := range slots {
					w.follow(s)
				}
				for s, at := range due {
					if now.After(at) {
						delete(due, s)
						s.log.Info("plugin changed on disk; reloading", "path", s.livePath())
						s.reload(ctx) // logs its own outcome
					}
				}
			}
		}
	}()
}

// pluginWatcher is the state of Watch's goroutine (and of its setup,
// before the goroutine starts): which path each slot's changes come from.
type pluginWatcher struct {
	log     *slog.Logger
	w       *fsnotify.Watcher
	watched map[*Operator]string // the live path each slot was last seen with
}

// follow watches s's live path, if it is not watched yet: the folder
// holding a module file (editors replace files), or every folder of a
// source folder. Folders watched for an earlier path stay watched; their
// events no longer reach s.
func (w *pluginWatcher) follow(s *Operator) {
	path := s.livePath()
	if w.watched[s] == path {
		return
	}
	w.watched[s] = path
	fi, err := os.Stat(path)
	if err != nil {
		return
	}
	dirs := []string{filepath.Dir(path)}
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
		if err := w.w.Add(d); err != nil {
			w.log.Warn("plugin will not reload on change: cannot watch", "operator", s.op.Name, "path", d, "error", err)
		}
	}
}
