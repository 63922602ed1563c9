// Package vhost is a vhost-user back end: the device side of virtio-net, served on a unix
// socket to a front end in another process (DPDK's virtio-user, QEMU's -netdev vhost-user),
// as a nic.Port of Config.Queues queue pairs. Pair q's guest TX ring (vring 2q+1) is the
// port's RX queue q and its guest RX ring (vring 2q) the port's TX queue q; frames are
// copied out of and into the front end's memory, which it shares region by region
// (SET_MEM_TABLE) and which is mapped here. Each RX queue has its own kick vector and
// buffer pool, so a NIC's rule holds: one poll thread per queue. A TX queue whose pair
// the front end does not run (a guest with fewer vCPUs than pairs) sends on one it runs.
//
// The control protocol runs on the port's own goroutine; RxBurst and TxBurst run on the
// poll thread and make no system call except the call eventfd, written only when the front
// end asked for an interrupt (EVENT_IDX's used_event, or no VRING_AVAIL_F_NO_INTERRUPT).
// The front end's kick eventfd of pair q's guest TX ring wakes RxVector(q), whatever
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
// Jumbo frames: Config.MTU (up to MaxMTU) sizes each RX queue's buffers for a frame of
// nic.MaxFrame(MTU), which the front end sends as one chain of any number of descriptors;
// toward the front end, with VIRTIO_NET_F_MRG_RXBUF a frame longer than one of its
// receive buffers is spread over several, num_buffers in the header saying how many.
// Frames longer than the MTU allows are dropped both ways and counted. A front end's
// VHOST_USER_NET_SET_MTU up to the port's MTU is taken, one above it refused.
//
// Implemented: split rings, VERSION_1, EVENT_IDX, MRG_RXBUF, VIRTIO_NET_F_MTU (the config
// space is the front end's: QEMU serves its host_mtu and sends NET_SET_MTU), up to
// MaxQueuePairs queue pairs (MQ: VIRTIO_NET_F_MQ and GET_QUEUE_NUM); the messages
// GET/SET_FEATURES, GET/SET_PROTOCOL_FEATURES (MQ, REPLY_ACK, NET_MTU), SET_OWNER,
// RESET_OWNER, SET_MEM_TABLE, SET_VRING_NUM/ADDR/BASE/KICK/CALL/ERR/ENABLE, GET_VRING_BASE,
// GET_QUEUE_NUM and NET_SET_MTU. Refused (a failure reply, the connection kept): dirty
// logging (SET_LOG_BASE/FD), GET_CONFIG, and every other request. Not offered: packed
// rings, indirect descriptors, RSS, offloads.
package vhost
