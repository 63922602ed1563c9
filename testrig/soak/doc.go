// Package soak holds uiod's soak test: model traffic through the dataplane with faults
// injected at random, for minutes. Each round opens two modelled ports (82599 with the
// ixgbe driver or 82576 with igb, four RSS queues, INTx with one poll thread or MSI-X with
// two), forwards UDP flows from one to the other with l2fwd while injecting random faults
// (every kind of package sim/intel: RX and TX faults on random queues, spurious interrupts
// and storms, link flaps), then probes every queue with one frame per flow (each must come
// out, and reach the RX queue the Toeplitz hash of the port's RSS key predicts: the RSS
// state survives every recovery the faults caused), stops and checks that every frame sent
// is accounted for, that every buffer is back in its pool once the ports are closed, that
// no DMA mapping is left, and that no goroutine or file descriptor outlives the round.
//
// The test skips unless it is given a duration:
//
//	go test ./testrig/soak/ -run TestSoak -soak 10m
//	SOAK_DURATION=60s go test ./testrig/soak/
//
// `make soak` runs it for 10 minutes; `make test` for 60 seconds. SOAK_SEED (or -seed)
// replays a run: the test logs the seed it used.
package soak
