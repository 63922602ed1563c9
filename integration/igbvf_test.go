package integration

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/qemutest"
)

// vfProbes probes at e2eInterval go through the VFs per steady run; vfEventProbes cover a
// PF event (the guest's event takes 2-3 s).
const (
	vfProbes      = 200
	vfEventProbes = 1600
)

// TestIntegrationIGBVF is the SR-IOV guest proof (testdata/igbvf.sh): the shared kernel
// with an emulated Intel IOMMU and two QEMU igb NICs, Linux's igb as the PF of both,
// creating two VFs each; VF 0 of each PF on vfio-pci, `uiod run` forwarding between them
// (nic: igbvf, adaptive). The host probes PF 1's wire and gets every probe back from PF
// 2's, the RX vector of VF 0 of PF 1 counts wake-ups in /proc/interrupts, then while
// probes run the PF changes the VF's MAC (and back) and goes down and up: after each the
// port forwards again, after the PF's reset it has re-initialised itself (device_resets
// in /status); the probes lost meanwhile are reported.
func TestIntegrationIGBVF(t *testing.T) {
	o := qemutest.Options{IOMMU: true, NICs: 2, HugePages: e2eHugePages, Timeout: 9 * time.Minute}
	o.Script = testdataScript(t, "igbvf.sh")
	vm := startGuest(t, qemutest.SharedKernel, o)
	host := binaries.uiod
	probe := func(name string, count int) *latencyRun {
		out, rep, err := qemutest.Latency(host, vm.NICs[0], vm.NICs[1], t.TempDir(), name, 3*time.Minute,
			"--count", strconv.Itoa(count), "--interval", e2eInterval.String(), "--timeout", e2eProbeTimeout.String())
		if err != nil {
			t.Errorf("uiod latency %s: %v", name, err)
			return nil
		}
		t.Log(out)
		return &latencyRun{Name: name, LatencyReport: *rep}
	}
	command := func(cmd, wait string) bool {
		if err := vm.Send(cmd); err != nil {
			t.Errorf("guest control port: %v", err)
			return false
		}
		if _, err := vm.WaitOutput(wait, 2*time.Minute); err != nil {
			t.Errorf("%s: %v", cmd, err)
			return false
		}
		return true
	}
	runs := map[string]*latencyRun{}
	events := []string{"vfmac", "pfbounce"}
	if _, err := vm.WaitOutput("E2E READY", 6*time.Minute); err != nil {
		t.Errorf("guest not ready: %v", err)
	} else if runs["steady"] = probe("steady", vfProbes); runs["steady"] != nil && command("snap steady", "E2E snapshot steady taken") {
		for _, ev := range events {
			done := make(chan *latencyRun)
			go func() { done <- probe("during-"+ev, vfEventProbes) }()
			time.Sleep(time.Second)
			ok := command(ev, "E2E "+ev+" done")
			runs["during-"+ev] = <-done
			if !ok {
				break
			}
			time.Sleep(2 * time.Second) // the watcher's MAC check runs every second
			runs["after-"+ev] = probe("after-"+ev, vfProbes)
			if !command("snap after-"+ev, "E2E snapshot after-"+ev+" taken") {
				break
			}
		}
	}
	if err := vm.Send("done"); err != nil {
		t.Errorf("tell the guest to stop: %v", err)
	}
	res, rep := finishE2E(t, vm)
	vfs := regexp.MustCompile(`E2E vf (\S+) of \S+ 0x8086:0x10ca`).FindAllStringSubmatch(res.Output, -1)
	if len(vfs) != 2 {
		t.Fatalf("guest VFs %q, want two 8086:10ca", vfs)
	}
	for i, vf := range vfs {
		if !rep.logged("nic driver", fmt.Sprintf(`"port": "vf%d"`, i), `"nic": "igbvf"`) {
			t.Errorf("the daemon's log does not say port vf%d (%s) was opened by igbvf", i, vf[1])
		}
	}
	t.Run("steady", func(t *testing.T) {
		r := runs["steady"]
		if r == nil {
			t.Fatal("no probes were sent")
		}
		checkProbes(t, r)
		n, ok := irqDelta(rep.snap("start"), rep.snap("steady"), "vfio-msix[0]("+vfs[0][1]+")")
		if !ok || n == 0 {
			t.Errorf("the RX vector of %s counted %d interrupts (line found %v) over %d probes", vfs[0][1], n, ok, vfProbes)
		}
		t.Logf("%s's RX vector (vfio-msix[0]) fired %d times for %d probes", vfs[0][1], n, vfProbes)
	})
	prev := "steady"
	for _, ev := range events {
		t.Run(ev, func(t *testing.T) {
			during, after := runs["during-"+ev], runs["after-"+ev]
			if during == nil || after == nil {
				t.Fatal("the event's probes were not sent")
			}
			t.Logf("during %s: sent %d, received %d, late %d, lost %d", ev, during.Sent, during.Received, during.Late, during.Lost)
			checkProbes(t, after)
			before, now := deviceResets(t, rep.snap(prev).status), deviceResets(t, rep.snap("after-"+ev).status)
			// Linux's igb tells a VF nothing of an administrator's MAC change ("Reload the
			// VF driver"): the probes to the old address are lost until it is set back.
			if ev == "pfbounce" && now[0] <= before[0] {
				t.Errorf("vf0 re-initialisations %d before, %d after: the port did not re-initialise", before[0], now[0])
			}
			t.Logf("re-initialisations vf0 %d -> %d, vf1 %d -> %d", before[0], now[0], before[1], now[1])
		})
		prev = "after-" + ev
	}
	if rep.runExit != 0 {
		t.Errorf("uiod run exit status %d after SIGTERM", rep.runExit)
	}
}

// deviceResets reads the two ports' device_resets from a /status document.
func deviceResets(t *testing.T, status []byte) [2]uint64 {
	t.Helper()
	var s struct {
		Ports []struct {
			Name  string `json:"name"`
			Stats struct {
				DeviceResets uint64 `json:"device_resets"`
			} `json:"stats"`
		} `json:"ports"`
	}
	var out [2]uint64
	if err := json.Unmarshal(status, &s); err != nil {
		t.Errorf("status: %v: %s", err, status)
		return out
	}
	for _, p := range s.Ports {
		if i := strings.TrimPrefix(p.Name, "vf"); i == "0" || i == "1" {
			out[i[0]-'0'] = p.Stats.DeviceResets
		}
	}
	return out
}
