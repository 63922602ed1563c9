package daemon

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/wire"
)

// frameSink counts frames arriving on a wire end by their sequence number.
type frameSink struct{ testutil.SeqSink }

func (s *frameSink) handler(f []byte, ts int64) { s.Handler(f, ts) }

func (s *frameSink) count() int { return s.Count() }

// frame is a 64-byte broadcast frame carrying seq in its last four bytes.
func frame(seq uint32) []byte { return testutil.SeqFrame(seq) }

// farEnds are the test's ends of a sim configuration's wires pair:NAME0 and pair:NAME1
// (see simConfig): gen[i] sends into port i, sink[i] counts what port i sends out.
type farEnds struct {
	gen  [2]wire.Port
	sink [2]*frameSink
}

// openFarEnds opens both far ends, each listening before it returns.
func openFarEnds(t *testing.T, name string) *farEnds {
	t.Helper()
	e := &farEnds{}
	for i := range e.gen {
		g, err := wire.Open("pair:" + name + string(rune('0'+i)))
		if err != nil {
			t.Fatal(err)
		}
		e.sink[i] = &frameSink{}
		g.SetHandler(e.sink[i].handler)
		e.gen[i] = g
	}
	return e
}

// sendBoth sends frames 0 to n-1 into both ports, and after every `every` of them waits
// (5 s at most) until both sinks have counted all but lag of them and pauses for a
// millisecond, so that the poll thread crosses its idle threshold; every 0 sends without
// a pause. Then it waits up to 10 s for all n both ways and reports whether they came.
func (e *farEnds) sendBoth(t *testing.T, n, every, lag int) bool {
	t.Helper()
	for i := 0; i < n; i++ {
		for _, g := range e.gen {
			if err := g.Send(frame(uint32(i))); err != nil {
				t.Fatal(err)
			}
		}
		if every > 0 && i%every == every-1 {
			testutil.WaitFor(5*time.Second, func() bool { return e.sink[0].count() >= i-lag && e.sink[1].count() >= i-lag })
			time.Sleep(time.Millisecond)
		}
	}
	return testutil.WaitFor(10*time.Second, func() bool { return e.sink[0].count() >= n && e.sink[1].count() >= n })
}

// wireEnds are the test's ends of the wires pair:NAME0 … pair:NAME(n-1), each keeping a
// copy of every frame it receives; they close when the test ends.
type wireEnds struct {
	gen []wire.Port
	mu  sync.Mutex
	got [][][]byte // by end, in arrival order
}

func openWireEnds(t *testing.T, name string, n int) *wireEnds {
	t.Helper()
	c := &wireEnds{got: make([][][]byte, n)}
	for i := range n {
		g, err := wire.Open(fmt.Sprintf("pair:%s%d", name, i))
		if err != nil {
			t.Fatal(err)
		}
		g.SetHandler(func(f []byte, _ int64) {
			c.mu.Lock()
			c.got[i] = append(c.got[i], bytes.Clone(f))
			c.mu.Unlock()
		})
		c.gen = append(c.gen, g)
		t.Cleanup(func() { g.Close() })
	}
	return c
}

// frames runs f on what every end has received so far, holding the lock (f may take
// frames off).
func (c *wireEnds) frames(f func(got [][][]byte)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f(c.got)
}

// count is the number of frames end i has received.
func (c *wireEnds) count(i int) (n int) {
	c.frames(func(got [][][]byte) { n = len(got[i]) })
	return n
}

// wait waits up to 10 s for cond on the frames received, and fails t naming what did not
// happen and how many frames each end has.
func (c *wireEnds) wait(t *testing.T, what string, cond func(got [][][]byte) bool) {
	t.Helper()
	if testutil.WaitFor(10*time.Second, func() (ok bool) { c.frames(func(got [][][]byte) { ok = cond(got) }); return ok }) {
		return
	}
	c.frames(func(got [][][]byte) {
		n := make([]int, len(got))
		for i := range got {
			n[i] = len(got[i])
		}
		t.Fatalf("%s: frames received by each end: %v", what, n)
	})
}

// hammer calls f in n goroutines, each over and over until f returns false or stop is
// called; stop waits for them.
func hammer(n int, f func() bool) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				if !f() {
					return
				}
			}
		}()
	}
	return func() {
		close(done)
		wg.Wait()
	}
}
