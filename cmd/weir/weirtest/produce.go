package weirtest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Pace produces rs with cl in the background, perSecond records a second
// (in slices every 10 ms), holding the last third back until release is
// called or five minutes have passed, so that an instance a test starts
// late, or a test's moment after a long rebalance, still finds records
// to read. stop ends it and waits; cl is closed once
// it is done. A failed produce fails the test, unless stop caused it.
func Pace(t testing.TB, cl *kgo.Client, rs []*kgo.Record, perSecond int) (release, stop func()) {
	released := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(released) }) }
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		defer cl.Close()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		per, hold := max(perSecond/100, 1), 2*len(rs)/3
		for i := 0; i < len(rs); i += per {
			if i >= hold && i < hold+per {
				select {
				case <-released:
				case <-time.After(5 * time.Minute):
				case <-ctx.Done():
					return
				}
			}
			<-tick.C
			if err := cl.ProduceSync(ctx, rs[i:min(i+per, len(rs))]...).FirstErr(); err != nil {
				if ctx.Err() == nil {
					t.Errorf("producing: %v", err)
				}
				return
			}
		}
	})
	return release, func() { cancel(); wg.Wait() }
}
