// Package ring is the Intel advanced-descriptor ring code shared by the ixgbe (82599) and
// igb (82576) drivers: the 16-byte RX and TX descriptor layouts, the RX queue that posts
// mempool buffers and takes back written frames, the TX queue that queues frames and
// reclaims completed descriptors, and the tail-register doorbell. Descriptor families of
// other devices (virtio's virtqueues) live with their own drivers.
package ring
