//go:build !linux

package testutil

import (
	"errors"
	"testing"
)

// Netns skips the test: network namespaces are Linux's.
func Netns(t testing.TB, prefix string) string {
	t.Helper()
	t.Skip("network namespaces need Linux")
	return ""
}

// IPIn fails the test: there is no ip tool.
func IPIn(t testing.TB, ns string, args ...string) string {
	t.Helper()
	t.Fatal("ip -n needs Linux")
	return ""
}

// InNetns fails: network namespaces are Linux's.
func InNetns(ns string, fn func() error) error {
	return errors.New("network namespaces need Linux")
}
