package config

import (
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// Host is what validation knows about the machine a configuration will run on.
type Host struct {
	// CPUs are the CPUs poll threads may be pinned to, in increasing order.
	CPUs []int
}

// LocalHost describes this machine: the CPUs in the process's affinity mask (all
// runtime.NumCPU CPUs where the mask cannot be read).
func LocalHost() Host {
	if cpus := affinityCPUs(); len(cpus) > 0 {
		return Host{CPUs: cpus}
	}
	return HostWithCPUs(runtime.NumCPU())
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
				return nil, fmt.Errorf("CPU range %q is backwards", item)
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
		return 0, fmt.Errorf("%q is not a CPU number", s)
	}
	if n > maxCPU {
		return 0, fmt.Errorf("CPU %d is beyond %d", n, maxCPU)
	}
	return n, nil
}
