//go:build !linux

package vhost

import (
	"errors"
	"net"

	"github.com/uiod/uiod/irq"
)

var errNotLinux = errors.New("vhost-user ports need Linux")

type kickVector struct{ vec *irq.Vector }

func newKickVector() (*kickVector, error) { return nil, errNotLinux }
func (k *kickVector) set(int) error       { return errNotLinux }
func (k *kickVector) self()               {}
func (k *kickVector) close() error        { return nil }

type caller struct{}

func newCaller(int) *caller { return nil }
func (c *caller) signal()   {}
func (c *caller) close()    {}
func isEventfd(int) bool    { return false }
func closeFd(int)           {}

func listen(string) (*net.UnixListener, error) { return nil, errNotLinux }
func (p *Port) run()                           { close(p.done) }

func mapTable([]region, []int, []int64) (*memTable, error) { return nil, errNotLinux }
func (t *memTable) unmap()                                 {}
func (t *memTable) same([]region, []int) bool              { return false }
