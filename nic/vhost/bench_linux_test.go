package vhost

import (
	"testing"

	"github.com/uiod/uiod/nic"
)

// BenchmarkBurst32 is the back end's data path at batch 32: per op the front end makes 32
// frames available on its TX ring and 32 buffers on its RX ring (index and ring entries
// only: the descriptors stay), RxBurst copies the 32 frames out and TxBurst copies them
// back in. frames/s counts frames through the back end, both directions together.
// "64B-mrg" has the front end negotiate mergeable RX buffers, as virtio-user and QEMU do
// by default (each frame still fits one of its 2 KiB buffers).
func BenchmarkBurst32(b *testing.B) {
	for _, tc := range []struct {
		name     string
		size     int
		features uint64
	}{{"64B", 64, stdFeatures}, {"1500B", 1500, stdFeatures}, {"64B-mrg", 64, stdFeatures | 1<<featMrgRxBuf}} {
		size := tc.size
		b.Run(tc.name, func(b *testing.B) {
			p, f := startServer(b, tc.features)
			for i := range 32 {
				f.transmit(i, frame(i, size))
			}
			burst32(b, p, f, 1, 0, 0)
		})
	}
}

// BenchmarkBurst32TxPair is BenchmarkBurst32 (64-byte frames) on a two-pair port, the
// frames taken from RX queue 0 and sent on TX queue 1: "own" with the front end running
// both pairs (TX queue 1 on pair 1, its ring's lock tried), "borrowed" with the front end
// running pair 0 alone (TX queue 1 sent on pair 0, its ring's lock taken).
func BenchmarkBurst32TxPair(b *testing.B) {
	for _, tt := range []struct {
		name  string
		pairs int
	}{{"own", 2}, {"borrowed", 1}} {
		b.Run(tt.name, func(b *testing.B) {
			p, _, f := startMQ(b, 2, tt.pairs)
			to := tt.pairs - 1 // the pair TX queue 1 lands on
			for i := range 32 {
				f.transmit(i, frame(i, 64))
			}
			burst32(b, p, f, 1, 1, to)
		})
	}
}

// BenchmarkBurst32Jumbo is BenchmarkBurst32 with 9014-byte frames on a port of MTU 9000
// with mergeable RX buffers: the front end sends each as a chain of five 2 KiB
// descriptors and posts 2 KiB receive buffers, five per frame.
func BenchmarkBurst32Jumbo(b *testing.B) {
	sock := b.TempDir() + "/vhost.sock"
	p, err := Open(Config{Socket: sock, Mode: Server, PoolSize: 512, MTU: 9000})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	f := dial(b, sock)
	f.start(stdFeatures | 1<<featMrgRxBuf)
	eventually(b, "link up", func() bool { return p.Link().Up })
	fr := frame(1, 9014)
	for i := range 32 {
		f.transmitChain(5*i, fr)
	}
	burst32(b, p, f, 5, 0, 0)
}

// burst32 is the benchmarks' loop once the front end has sent its 32 frames, frame i as
// the chain that starts at descriptor per*i: those are taken, then per op made available
// again, taken from RX queue 0 by RxBurst and sent back by TxBurst on TX queue txq into
// per buffers a frame posted on pair to's guest RX ring.
func burst32(b *testing.B, p *Port, f *frontend, per, txq, to int) {
	rx := make([]*nic.Buf, 32)
	rxAll(b, p, 32)
	b.ResetTimer()
	for range b.N {
		for i := range 32 {
			f.pushAvail(ringGuestTX, uint16(per*i))
		}
		n := p.RxBurst(0, rx)
		f.postRxOn(to, per*n)
		if p.TxBurst(txq, rx[:n]) != n || n != 32 {
			b.Fatalf("burst of %d", n)
		}
		f.usedSeen[txRing(to)] = f.usedIdx(txRing(to))
	}
	b.ReportMetric(float64(64*b.N)/b.Elapsed().Seconds(), "frames/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(64*b.N), "ns/frame")
}
