// Package integration holds uiod's real-kernel tests: host-side tests (TestIntegration*)
// that boot a QEMU guest with emulated igb NICs (see internal/qemutest) and run the guest
// tests of package integration/guest in it, each reported here as a subtest.
//
// They skip unless run as root with QEMU, a static busybox and the guest kernel present:
// scripts/qemu-setup.sh installs them. Run them with
//
//	go test ./integration/
package integration
