package config

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/uiod/uiod/internal/clip"
	"github.com/uiod/uiod/pci/pcihost"
)

// Host is what validation knows about the machine a configuration will run on.
type Host struct {
	// CPUs are the CPUs poll threads may be pinned to, in increasing order.
	CPUs []int
	// Memlock is the most memory the process may lock (RLIMIT_MEMLOCK), in bytes; 0 means
	// no limit applies (unlimited, or the process has CAP_IPC_LOCK).
	Memlock uint64
	// HugePages are the host's reserved hugepages; HugePages.Total = 0 means none.
	HugePages HugePages
	// MemAvailable is the memory available to new allocations in bytes, 0 if unknown:
	// /proc/meminfo's MemAvailable, or what MemAvailableFrom names.
	MemAvailable uint64
	// MemAvailableFrom says where MemAvailable comes from when not /proc/meminfo.
	MemAvailableFrom string
}

// HugePages are the hugepage counts of /proc/meminfo.
type HugePages struct {
	Total, Free uint64 // pages
	Size        uint64 // bytes per page
}

// LocalHost describes this machine: the CPUs in the process's affinity mask (all
// runtime.NumCPU CPUs where the mask cannot be read), its RLIMIT_MEMLOCK and the
// hugepages and MemAvailable of /proc/meminfo (without a MemAvailable line, sysinfo's
// free and buffer RAM).
func LocalHost() Host { return LocalHostAt("/") }

// LocalHostAt is LocalHost with /proc/meminfo read under root (a --root prefix).
func LocalHostAt(root string) Host {
	h := Host{CPUs: affinityCPUs(), Memlock: memlockLimit()}
	if len(h.CPUs) == 0 {
		h.CPUs = HostWithCPUs(runtime.NumCPU()).CPUs
	}
	// Read inside the root only (no symlink out of it), a regular file, without
	// blocking on a FIFO or device node put in its place, at most maxMeminfo bytes.
	if ph, err := pcihost.New(cmp.Or(root, "/")); err == nil {
		if b, err := ph.ReadFile("proc/meminfo", maxMeminfo); err == nil {
			h.HugePages = parseMeminfo(string(b))
			h.MemAvailable = parseMemAvailable(string(b))
		}
	}
	if h.MemAvailable == 0 {
		// The sim ports' memory is this process's whatever the root: without a meminfo
		// to say, ask the kernel.
		h.MemAvailable, h.MemAvailableFrom = sysinfoAvailable(), "sysinfo free and buffer RAM"
	}
	return h
}

// maxMeminfo bounds /proc/meminfo (about 1.5 KiB on Linux 6.x).
const maxMeminfo = 64 << 10

// parseMeminfo reads the hugepage lines of /proc/meminfo ("HugePages_Total:  16",
// "Hugepagesize:  2048 kB").
func parseMeminfo(text string) HugePages {
	var hp HugePages
	for line := range strings.SplitSeq(text, "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(val)
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			continue
		}
		switch key {
		case "HugePages_Total":
			hp.Total = n
		case "HugePages_Free":
			hp.Free = n
		case "Hugepagesize":
			if len(f) == 2 && f[1] == "kB" && n < 1<<40 {
				hp.Size = n << 10
			}
		}
	}
	if hp.Size == 0 {
		return HugePages{}
	}
	return hp
}

// HostWithCPUs describes a machine whose CPUs are numbered 0 to n-1.
func HostWithCPUs(n int) Host {
	cpus := make([]int, n)
	for i := range cpus {
		cpus[i] = i
	}
	return Host{CPUs: cpus}
}

func (h Host) hasCPU(cpu int) bool {
	_, ok := slices.BinarySearch(h.CPUs, cpu)
	return ok
}

// cpuList formats h.CPUs in the kernel's list format ("0-3,6").
func (h Host) cpuList() string {
	var b strings.Builder
	for i := 0; i < len(h.CPUs); {
		j := i
		for j+1 < len(h.CPUs) && h.CPUs[j+1] == h.CPUs[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(h.CPUs[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(h.CPUs[j]))
		}
		i = j + 1
	}
	if b.Len() == 0 {
		return "none"
	}
	return b.String()
}

// maxCPU bounds CPU numbers in lists, so that a range like "0-999999999" is refused
// rather than expanded.
const maxCPU = 8191

// ParseCPUList parses the kernel's CPU list format, as taskset -c and sysfs write it:
// comma-separated CPU numbers and inclusive ranges, such as "0-3,6". Blanks around items
// are ignored; the empty list is valid.
func ParseCPUList(s string) ([]int, error) {
	var cpus []int
	if strings.TrimSpace(s) == "" {
		return cpus, nil
	}
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		lo, hi, isRange := strings.Cut(item, "-")
		a, err := parseCPU(lo)
		if err != nil {
			return nil, err
		}
		b := a
		if isRange {
			if b, err = parseCPU(hi); err != nil {
				return nil, err
			}
			if b < a {
				return nil, fmt.Errorf("CPU range %s is backwards", clip.Quote(item))
			}
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

func parseCPU(s string) (int, error) {
	s = strings.TrimSpace(s)
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || s[0] == '+' {
		return 0, fmt.Errorf("%s is not a CPU number", clip.Quote(s))
	}
	if n > maxCPU {
		return 0, fmt.Errorf("CPU %d is beyond %d", n, maxCPU)
	}
	return n, nil
}
