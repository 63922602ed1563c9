package nic

import (
	"path"
	"reflect"
)

// Describer is a port that says in words what it is ("af_xdp native copy").
type Describer interface{ Describe() string }

// Describe names what p is for a message: its own Describe when it has one, else its
// driver package's name ("virtio port"), never a Go type.
func Describe(p Port) string {
	if d, ok := p.(Describer); ok {
		return d.Describe()
	}
	t := reflect.TypeOf(p)
	if t == nil {
		return "no port"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.PkgPath() == "" {
		return t.Name() + " port"
	}
	return path.Base(t.PkgPath()) + " port"
}
