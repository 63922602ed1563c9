//go:build !linux

package lpm

import "errors"

func adviseHuge([]uint32) error { return errors.New("not Linux") }
