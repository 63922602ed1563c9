package ovs

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

const nrHugepages = "/proc/sys/vm/nr_hugepages"

// reserveHugepages adds n default-size huge pages to the pool and mounts a hugetlbfs for
// them under dir; it gives both back when the test ends. An error means the machine
// cannot give them (the caller skips).
func reserveHugepages(t *testing.T, n int, dir string) (mount string, err error) {
	t.Helper()
	before, err := readInt(nrHugepages)
	if err != nil {
		return "", err
	}
	t.Cleanup(func() {
		if err := os.WriteFile(nrHugepages, []byte(strconv.Itoa(before)), 0o644); err != nil {
			t.Errorf("giving the huge pages back (%s = %d): %v", nrHugepages, before, err)
		}
	})
	if err := os.WriteFile(nrHugepages, []byte(strconv.Itoa(before+n)), 0o644); err != nil {
		return "", fmt.Errorf("%s: %w", nrHugepages, err)
	}
	free, err := meminfo("HugePages_Free")
	if err != nil {
		return "", err
	}
	if free < n {
		return "", fmt.Errorf("asked for %d more huge pages, %d free", n, free)
	}
	mount = dir + "/hugepages"
	if err := os.Mkdir(mount, 0o755); err != nil {
		return "", err
	}
	if err := syscall.Mount("nodev", mount, "hugetlbfs", 0, ""); err != nil {
		return "", fmt.Errorf("mount hugetlbfs on %s: %w", mount, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(mount, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", mount, err)
		}
	})
	return mount, nil
}

func readInt(path string) (int, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return n, nil
}

// meminfo is the number /proc/meminfo gives for key.
func meminfo(key string) (int, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return parseMeminfo(f, key)
}

func parseMeminfo(f interface{ Read([]byte) (int, error) }, key string) (int, error) {
	s := bufio.NewScanner(f)
	for s.Scan() {
		k, v, ok := strings.Cut(s.Text(), ":")
		if !ok || k != key {
			continue
		}
		fs := strings.Fields(v)
		if len(fs) == 0 {
			break
		}
		return strconv.Atoi(fs[0])
	}
	return 0, fmt.Errorf("/proc/meminfo: no %s", key)
}

func TestParseMeminfo(t *testing.T) {
	const in = "MemTotal:       24684064 kB\nHugePages_Total:     512\nHugePages_Free:      500\nBad:\n"
	for _, tc := range []struct {
		key  string
		want int
		ok   bool
	}{
		{"HugePages_Free", 500, true},
		{"HugePages_Total", 512, true},
		{"MemTotal", 24684064, true},
		{"Bad", 0, false},
		{"HugePages_Rsvd", 0, false},
	} {
		got, err := parseMeminfo(strings.NewReader(in), tc.key)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseMeminfo(%s) = %d, %v; want %d, ok %v", tc.key, got, err, tc.want, tc.ok)
		}
	}
}
