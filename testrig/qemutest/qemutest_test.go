package qemutest

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/uiod/uiod/internal/testutil"
)

func TestQEMUArgs(t *testing.T) {
	dir, err := os.MkdirTemp("", "uiod-qemu-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	tests := []struct {
		name        string
		o           Options
		wantCmdline []string
		notCmdline  []string
		iommu       bool
	}{
		{"iommu", Options{NICs: 2, Memory: "512M", CPUs: 1, IOMMU: true, HugePages: 8, Cmdline: []string{"foo=bar"}},
			[]string{"intel_iommu=on", "iommu=pt", "hugepages=8", "foo=bar", "console=ttyS0", "panic=-1"}, []string{"intel_iommu=off"}, true},
		{"no iommu", Options{NICs: 3, Memory: "1G", CPUs: 2},
			[]string{"intel_iommu=off"}, []string{"intel_iommu=on", "iommu=pt", "hugepages=0"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.o.Kernel = Kernel{Image: "/k/bzImage"}
			vm := &VM{dir: dir}
			args := vm.qemuArgs(tt.o, "/i/initrd")
			if len(vm.NICs) != tt.o.NICs {
				t.Fatalf("%d NICs, want %d", len(vm.NICs), tt.o.NICs)
			}
			cmdline := strings.Fields(args[slices.Index(args, "-append")+1])
			for _, w := range tt.wantCmdline {
				if !slices.Contains(cmdline, w) {
					t.Errorf("kernel command line %q lacks %s", cmdline, w)
				}
			}
			for _, w := range tt.notCmdline {
				if slices.Contains(cmdline, w) {
					t.Errorf("kernel command line %q has %s", cmdline, w)
				}
			}
			joined := strings.Join(args, " ")
			iommu := strings.Index(joined, "intel-iommu,intremap=on")
			if (iommu >= 0) != tt.iommu {
				t.Errorf("intel-iommu device present %v, want %v", iommu >= 0, tt.iommu)
			}
			if first := strings.Index(joined, "-device igb"); iommu > first {
				t.Errorf("the IOMMU comes after the first NIC: %s", joined)
			}
			for i, n := range vm.NICs {
				for _, p := range []string{n.GuestSocket, n.HostSocket} {
					if len(p) >= 108 || filepath.Dir(p) != dir {
						t.Errorf("socket path %q: too long or outside %s", p, dir)
					}
				}
				for _, want := range []string{
					"local.path=" + n.GuestSocket + ",remote.type=unix,remote.path=" + n.HostSocket,
					"igb,bus=rp" + string(rune('0'+i)) + ",netdev=n" + string(rune('0'+i)) + ",mac=" + n.MAC.String(),
				} {
					if !strings.Contains(joined, want) {
						t.Errorf("arguments lack %q: %s", want, joined)
					}
				}
				if n.MAC[5] != byte(0x56+i) {
					t.Errorf("NIC %d has MAC %v", i, n.MAC)
				}
			}
			for _, want := range []string{"-m " + tt.o.Memory, "-machine q35", "-accel tcg", "-kernel /k/bzImage", "-initrd /i/initrd", "-no-reboot"} {
				if !strings.Contains(joined, want) {
					t.Errorf("arguments lack %q", want)
				}
			}
		})
	}
}

// TestInitScriptSyntax checks the generated /init with the host's sh and, where it is
// installed, busybox's (the one that runs it in the guest).
func TestInitScriptSyntax(t *testing.T) {
	shells := [][]string{{"sh", "-n"}}
	if bb, err := Busybox(); err == nil {
		shells = append(shells, []string{bb, "sh", "-n"})
	}
	for _, c := range []initConfig{{}, {UnsafeNoIOMMU: true, IOMMU: true, Kernel: `shared "quoted" $x`}} {
		s := initScript(c)
		testutil.TextContains(t, "init script", s, ResultMarker+"$*", "mark \"exit=$rc", "poweroff -f", "UIOD_GUEST=1", igbID, virtioNetID)
		if got := strings.Contains(s, "enable_unsafe_noiommu_mode"); got != c.UnsafeNoIOMMU {
			t.Errorf("noiommu handling present %v, want %v", got, c.UnsafeNoIOMMU)
		}
		for _, sh := range shells {
			cmd := exec.Command(sh[0], sh[1:]...)
			cmd.Stdin = strings.NewReader(s)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("%v: %v: %s", sh, err, out)
			}
		}
	}
}

func TestLocateMissing(t *testing.T) {
	t.Setenv("UIOD_QEMU", filepath.Join(t.TempDir(), "no-qemu"))
	t.Setenv("UIOD_BUSYBOX", filepath.Join(t.TempDir(), "no-busybox"))
	t.Setenv("UIOD_QEMU_CACHE", t.TempDir())
	t.Setenv("UIOD_SHARED", t.TempDir())
	for name, f := range map[string]func() error{
		"qemu":    func() error { _, err := QEMU(); return err },
		"busybox": func() error { _, err := Busybox(); return err },
		"debian":  func() error { _, err := DebianKernel(); return err },
		"shared":  func() error { _, err := SharedKernel(); return err },
	} {
		if err := f(); !errors.Is(err, ErrMissing) {
			t.Errorf("%s: error %v, want ErrMissing", name, err)
		}
	}
}

func TestBusyboxMustBeStatic(t *testing.T) {
	// /bin/sh on Debian is dynamically linked.
	if static, err := isStatic("/bin/sh"); err == nil && !static {
		t.Setenv("UIOD_BUSYBOX", "/bin/sh")
		if _, err := Busybox(); !errors.Is(err, ErrMissing) {
			t.Errorf("a dynamic busybox was accepted: %v", err)
		}
	}
}

func TestVirtioNICArgs(t *testing.T) {
	for _, iommu := range []bool{false, true} {
		dev := nicDevice(Options{NICModel: "virtio", IOMMU: iommu}, 1, net.HardwareAddr{0x52, 0x54, 0, 0x12, 0x34, 0x57})
		for _, want := range []string{"virtio-net-pci,bus=rp1,netdev=n1,mac=52:54:00:12:34:57", "disable-legacy=on", "mq=on"} {
			if !strings.Contains(dev, want) {
				t.Errorf("%s lacks %s", dev, want)
			}
		}
		if got := strings.Contains(dev, "iommu_platform=on"); got != iommu {
			t.Errorf("%s: iommu_platform=on %v with IOMMU %v", dev, got, iommu)
		}
	}
	if dev := nicDevice(Options{}, 0, net.HardwareAddr{0x52, 0x54, 0, 0x12, 0x34, 0x56}); !strings.HasPrefix(dev, "igb,") {
		t.Errorf("default NIC %s, want igb", dev)
	}
	mixed := Options{NICModel: "virtio", NICModels: []string{"igb"}}
	if a, b := nicDevice(mixed, 0, nil), nicDevice(mixed, 1, nil); !strings.HasPrefix(a, "igb,") || !strings.HasPrefix(b, "virtio-net-pci,") {
		t.Errorf("mixed NICs %s and %s, want igb then virtio", a, b)
	}
}

func TestTAPBackend(t *testing.T) {
	vm := &VM{dir: t.TempDir()}
	args := strings.Join(vm.qemuArgs(Options{Kernel: Kernel{Image: "/k/bzImage"}, NICs: 2, Memory: "512M", CPUs: 2, NICModel: "virtio", TAPQueues: 2, IOMMU: true}, "/i/initrd"), " ")
	tap := vm.NICs[0].TAP
	if tap == "" || len(tap) > 15 || vm.NICs[1].TAP != "" {
		t.Fatalf("tap names %q %q", tap, vm.NICs[1].TAP)
	}
	for _, want := range []string{
		"tap,id=n0,ifname=" + tap + ",queues=2,script=no,downscript=no,vhost=off",
		"virtio-net-pci,bus=rp0,netdev=n0,mac=52:54:00:12:34:56,disable-legacy=on,mq=on,vectors=6,iommu_platform=on",
		"dgram,id=n1,",
		"virtio-net-pci,bus=rp1,netdev=n1,mac=52:54:00:12:34:57,disable-legacy=on,mq=on,vectors=4,iommu_platform=on",
	} {
		if !strings.Contains(args, want) {
			t.Errorf("arguments lack %q: %s", want, args)
		}
	}
}
