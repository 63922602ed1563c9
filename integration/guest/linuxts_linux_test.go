package guest

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// checkLinuxTimestamping is the Linux cross-check of the 1588 unit QEMU's igb emulates:
// while NIC addr is still on the kernel's igb driver, ETHTOOL_GET_TS_INFO (ethtool -T)
// must report hardware TX and RX timestamping and a PTP hardware clock, and
// SIOCSHWTSTAMP (hwstamp_ctl) must take TX on and PTPv2 layer-2 Sync on receive, the mode
// uiod programs. It skips where the NIC is not on igb.
func checkLinuxTimestamping(t *testing.T, addr string) {
	t.Helper()
	if driverOf(t, addr) != "igb" {
		t.Skipf("%s is on %q, not the kernel's igb", addr, driverOf(t, addr))
	}
	ifs, err := os.ReadDir(filepath.Join("/sys/bus/pci/devices", addr, "net"))
	if err != nil || len(ifs) == 0 {
		t.Fatalf("%s: no network interface: %v", addr, err)
	}
	name := ifs[0].Name()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	info, err := unix.IoctlGetEthtoolTsInfo(fd, name)
	if err != nil {
		t.Fatalf("%s: ETHTOOL_GET_TS_INFO: %v", name, err)
	}
	t.Logf("%s (%s): so_timestamping %#x, phc %d, tx types %#x, rx filters %#x", name, addr, info.So_timestamping, info.Phc_index, info.Tx_types, info.Rx_filters)
	want := uint32(unix.SOF_TIMESTAMPING_TX_HARDWARE | unix.SOF_TIMESTAMPING_RX_HARDWARE | unix.SOF_TIMESTAMPING_RAW_HARDWARE)
	if info.So_timestamping&want != want || info.Phc_index < 0 {
		t.Errorf("%s: Linux's igb reports no hardware timestamping on QEMU's igb", name)
	}
	cfg := &unix.HwTstampConfig{Tx_type: unix.HWTSTAMP_TX_ON, Rx_filter: unix.HWTSTAMP_FILTER_PTP_V2_L2_SYNC}
	if err := unix.IoctlSetHwTstamp(fd, name, cfg); err != nil {
		t.Errorf("%s: SIOCSHWTSTAMP tx on, rx PTPv2 L2 Sync: %v", name, err)
		return
	}
	t.Logf("%s: SIOCSHWTSTAMP gave tx %d, rx filter %d", name, cfg.Tx_type, cfg.Rx_filter)
}
