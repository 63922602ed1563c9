package wire

import "sync"

// Recorder keeps a copy of every frame its Handle receives until Take hands them over:
// the peer end of a test's wire, installed with port.SetHandler(r.Handle). Its zero value
// is ready to use, and it is safe for concurrent use.
type Recorder struct {
	mu     sync.Mutex
	frames [][]byte
}

// Handle is a Handler that records a copy of frame.
func (r *Recorder) Handle(frame []byte, _ int64) {
	r.mu.Lock()
	r.frames = append(r.frames, append([]byte(nil), frame...))
	r.mu.Unlock()
}

// Len is the number of frames recorded since the last Take.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.frames)
}

// Take returns the frames recorded since the last Take, oldest first, and forgets them.
func (r *Recorder) Take() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.frames
	r.frames = nil
	return f
}
