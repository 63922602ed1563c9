package vhost_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/vhost"
)

// TestIntegrationDPDKMultiQueue runs DPDK's virtio-user with queues=2 (testpmd with two
// RX and two TX queues, macswap) against a two-pair vhost-user port: virtio-user attaches
// (it refuses a back end without VIRTIO_NET_F_MQ or with GET_QUEUE_NUM 1), enables both
// pairs, and frames uiod sends on TX queue q come back on RX queue q (testpmd forwards its
// RX queue q to its TX queue q), every one, on both pairs.
func TestIntegrationDPDKMultiQueue(t *testing.T) {
	bin := testpmdBin(t)
	const pairs = 2
	p, sock := dpdkPort(t, vhost.Config{Queues: pairs, PoolSize: 1024})
	tp := &testpmd{t: t, bin: bin, sock: sock, mode: "macswap", queues: pairs,
		prefix: fmt.Sprintf("uiodvhmq%d", os.Getpid())}
	tp.start()
	defer tp.kill()
	deadline := time.Now().Add(60 * time.Second)
	for !p.Link().Up {
		if time.Now().After(deadline) {
			t.Fatalf("link never came up; testpmd:\n%s", tp.log)
		}
		time.Sleep(10 * time.Millisecond)
	}
	pool, err := nic.NewMempool(&nic.HeapDMA{}, 256, 2048)
	if err != nil {
		t.Fatal(err)
	}
	const perQueue = 512
	sent := make([]uint32, pairs)          // frames taken by TxBurst, per queue
	back := make([]map[uint32]bool, pairs) // sequence numbers echoed, per RX queue
	wrong := 0                             // echoes of queue q's frames on another queue
	for q := range back {
		back[q] = map[uint32]bool{}
	}
	rx, tx := make([]*nic.Buf, 32), make([]*nic.Buf, 0, 8)
	// ahead is how far the frames sent on a queue may run ahead of its echoes; it grows
	// by 8 whenever a queue has seen no echo for 50 ms (the first frames may reach
	// testpmd before it polls, and are lost), so lost frames never stall the test.
	ahead := []int{8, 8}
	lastEcho := []time.Time{time.Now(), time.Now()}
	done := func() bool {
		for q := range pairs {
			if len(back[q]) < perQueue {
				return false
			}
		}
		return true
	}
	for !done() {
		if time.Now().After(deadline) {
			t.Fatalf("echoes per queue %d/%d of %d (sent %v); port %+v; testpmd:\n%s",
				len(back[0]), len(back[1]), perQueue, sent, p.Stats(), tp.log)
		}
		for q := range pairs {
			// Up to 8 frames ahead of the echoes: testpmd's RX ring is filled by then.
			tx = tx[:0]
			if time.Since(lastEcho[q]) > 50*time.Millisecond {
				ahead[q] += 8
				lastEcho[q] = time.Now()
			}
			for len(tx) < 8 && int(sent[q])+len(tx) < len(back[q])+ahead[q] {
				b := pool.Get()
				if b == nil {
					break
				}
				f := b.Data()[:64]
				clear(f)
				copy(f, []byte{2, 0, 0, 0, 0, 8})
				copy(f[6:], srcMAC)
				binary.BigEndian.PutUint16(f[12:], 0x88b5)
				f[59] = byte(q)
				binary.BigEndian.PutUint32(f[60:], sent[q]+uint32(len(tx)))
				b.SetLen(64)
				tx = append(tx, b)
			}
			n := p.TxBurst(q, tx)
			for _, b := range tx[n:] {
				b.Free() // the ring was full: sent again next round
			}
			sent[q] += uint32(n)
			m := p.RxBurst(q, rx)
			for _, b := range rx[:m] {
				f := b.Bytes()
				switch {
				case len(f) < 64 || binary.BigEndian.Uint16(f[12:]) != 0x88b5:
				case int(f[59]) != q:
					wrong++
				default:
					back[q][binary.BigEndian.Uint32(f[60:])] = true
					lastEcho[q] = time.Now()
				}
				b.Free()
			}
		}
		time.Sleep(100 * time.Microsecond)
	}
	if wrong != 0 {
		t.Errorf("%d frames came back on another pair than they left by", wrong)
	}
	s := p.Stats()
	t.Logf("sent %v, echoed %d/%d (window grown to %v); port %+v", sent, len(back[0]), len(back[1]), ahead, s)
	if s.RxErrors != 0 || s.TxErrors != 0 || p.Faults() != 0 {
		t.Errorf("port %+v, faults %d", s, p.Faults())
	}
}
