package qemutest

import (
	"strings"
	"testing"
)

func TestTmpBench(t *testing.T) {
	k, _ := DebianKernel()
	for i := 0; i < 2; i++ {
		for _, img := range []string{k.Image, strings.Replace(k.Image, "vmlinux", "vmlinuz", 1)} {
			kk := k
			kk.Image = img
			var first string
			r := Run(t, Options{Kernel: kk, IOMMU: true, Script: "true", Log: func(l string) {
				if first == "" {
					first = l
				}
			}})
			t.Logf("%s: boot %v wall %v console %d bytes", img[len(img)-25:], r.Boot, r.Wall, len(r.Console))
		}
	}
}
