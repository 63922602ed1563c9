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

func writeEventfd(int, *[8]byte) {}
func isEventfd(int) bool         { return false }
func closeFd(int)                {}

func listen(string) (*net.UnixListener, error) { return nil, errNotLinux }
func (p *Port) run()                           { close(p.done) }

func mapTable([]region, []int) (*memTable, error) { return nil, errNotLinux }
func (t *memTable) unmap()                        {}
