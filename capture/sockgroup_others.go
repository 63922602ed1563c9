//go:build !linux

package capture

import "errors"

// giveGroup fails: capture.group is for Linux only.
func giveGroup(string, *Group) error { return errors.New("capture.group is only supported on Linux") }

// checkSearchable fails: capture.group is for Linux only.
func checkSearchable(string, *Group) error {
	return errors.New("capture.group is only supported on Linux")
}

// accessHint says nothing more off Linux.
func accessHint(string) string { return "" }
