package vhost

import (
	"net"
	"testing"
)

// TestFrontend is the test front end for the package's external tests (the daemon's).
type TestFrontend struct{ f *frontend }

// DialTestFrontend connects a test front end to sock and starts both rings with the
// standard features (VERSION_1, EVENT_IDX, protocol features).
func DialTestFrontend(t testing.TB, sock string) *TestFrontend {
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	f := newFrontend(t, c)
	f.start(stdFeatures)
	return &TestFrontend{f}
}

// Transmit sends frame from the front end (descriptor slot).
func (tf *TestFrontend) Transmit(slot int, frame []byte) { tf.f.transmit(slot, frame) }

// PostRx offers n receive buffers.
func (tf *TestFrontend) PostRx(n int) { tf.f.postRx(n) }

// Received returns the frames received since the last call, headers stripped.
func (tf *TestFrontend) Received() [][]byte { return receivedHdr(tf.f, 12) }

// DialTestFrontendPairs is DialTestFrontend bringing up pairs queue pairs (with 64-entry
// rings).
func DialTestFrontendPairs(t testing.TB, sock string, pairs int) *TestFrontend {
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	f := newFrontend(t, c)
	f.num, f.pairs = 64, pairs
	features := uint64(stdFeatures)
	if pairs > 1 {
		features |= 1 << featMQ
	}
	f.start(features)
	return &TestFrontend{f}
}

// TransmitOn sends frame on queue pair q (descriptor slot).
func (tf *TestFrontend) TransmitOn(q, slot int, frame []byte) { tf.f.transmitOn(q, slot, frame) }

// PostRxOn offers n receive buffers on queue pair q.
func (tf *TestFrontend) PostRxOn(q, n int) { tf.f.postRxOn(q, n) }

// ReceivedOn returns the frames queue pair q received since the last call, headers
// stripped.
func (tf *TestFrontend) ReceivedOn(q int) [][]byte { return receivedHdr(tf.f.f(q), 12) }

// MergeableRx reports whether the current front end negotiated VIRTIO_NET_F_MRG_RXBUF.
func (p *Port) MergeableRx() bool {
	p.rings[0].mu.Lock()
	defer p.rings[0].mu.Unlock()
	return p.mrg
}
