package daemon

import "github.com/uiod/uiod/nic"

// Describe says what the driver's port is (nic.Describe), "absent port" while the
// device is away. A control-plane call.
func (l *livePort) Describe() string {
	p := l.enter()
	if p == nil {
		return "absent port"
	}
	defer l.leave()
	return nic.Describe(p)
}
