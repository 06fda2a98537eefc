package dbio

import (
	"container/list"
	"time"
)

// row is the result of looking one key up: the JSON text of each result
// column, or nil for a key with no row (a miss).
type row struct {
	cols [][]byte
	// rejected, if set, says why the database refused the key: the
	// records with that key are dead letters. Such rows are not cached.
	rejected string
}

// cache keeps the rows (and misses) looked up by one lookup instance for
// ttl of processing time, at most size keys, evicting the least recently
// used key when full and dropping an expired entry when it is next asked
// for. Keys are query parameters: string, int64, float64 or bool. A cache is
// used by one goroutine.
type cache struct {
	ttl  time.Duration
	size int
	m    map[any]*list.Element
	lru  list.List // of *centry, most recently used first
}

type centry struct {
	key     any
	row     *row
	expires time.Time
}

func newCache(ttl time.Duration, size int) *cache {
	return &cache{ttl: ttl, size: size, m: make(map[any]*list.Element)}
}

// get returns the row cached for key, if it has not expired by now.
func (c *cache) get(key any, now time.Time) (*row, bool) {
	e, ok := c.m[key]
	if !ok {
		return nil, false
	}
	ce := e.Value.(*centry)
	if !now.Before(ce.expires) {
		c.lru.Remove(e)
		delete(c.m, key)
		return nil, false
	}
	c.lru.MoveToFront(e)
	return ce.row, true
}

// put caches r for key from now on, evicting the least recently used key if
// the cache is full.
func (c *cache) put(key any, r *row, now time.Time) {
	if e, ok := c.m[key]; ok {
		ce := e.Value.(*centry)
		ce.row, ce.expires = r, now.Add(c.ttl)
		c.lru.MoveToFront(e)
		return
	}
	if c.lru.Len() >= c.size {
		if last := c.lru.Back(); last != nil {
			delete(c.m, last.Value.(*centry).key)
			c.lru.Remove(last)
		}
	}
	c.m[key] = c.lru.PushFront(&centry{key: key, row: r, expires: now.Add(c.ttl)})
}

// len returns the number of keys cached, expired or not.
func (c *cache) len() int { return c.lru.Len() }
