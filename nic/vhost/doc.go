// Package vhost is a vhost-user back end: the device side of virtio-net, served on a unix
// socket to a front end in another process (DPDK's virtio-user, QEMU's -netdev vhost-user),
// as a nic.Port. The front end's guest TX ring is the port's RX queue 0 and its guest RX
// ring the port's TX queue 0; frames are copied out of and into the front end's memory,
// which it shares region by region (SET_MEM_TABLE) and which is mapped here.
//
// The control protocol runs on the port's own goroutine; RxBurst and TxBurst run on the
// poll thread and make no system call except the call eventfd, written only when the front
// end asked for an interrupt (EVENT_IDX's used_event, or no VRING_AVAIL_F_NO_INTERRUPT).
// The front end's kick eventfd of the guest TX ring wakes the port's RxVector, whatever
// descriptor the front end sends after a reconnect.
//
// The front end is untrusted: every message is checked before it is applied, every
// descriptor address and length against the memory table, every index against the ring
// size, and chains are bounded by it; a region's file must hold the region, and a front
// end that shrinks it under the mapping faults inside a burst, which recovers. A front end
// that breaks a rule has its connection closed and its rings stopped, counted in Faults and
// in Stats' RxErrors; the port waits for the next one. A front end that comes back resumes
// its rings from the used index in its memory (virtio-user reconnecting in server mode
// sends base 0, as DPDK's and QEMU's own back ends tolerate).
//
// Implemented: split rings, VERSION_1, EVENT_IDX, one queue pair; the messages GET/SET_FEATURES,
// GET/SET_PROTOCOL_FEATURES (MQ, REPLY_ACK), SET_OWNER, RESET_OWNER, SET_MEM_TABLE,
// SET_VRING_NUM/ADDR/BASE/KICK/CALL/ERR/ENABLE, GET_VRING_BASE and GET_QUEUE_NUM. Refused
// (a failure reply, the connection kept): dirty logging (SET_LOG_BASE/FD), and every other
// request. Not offered: packed rings, indirect descriptors, mergeable RX buffers,
// multi-queue beyond one pair, offloads.
package vhost
