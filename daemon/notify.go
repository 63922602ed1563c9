package daemon

import (
	"fmt"
	"net"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// NotifySocketEnv is the environment variable in which systemd passes a Type=notify
// service the socket to report its state to.
const NotifySocketEnv = "NOTIFY_SOCKET"

// Notify sends state — newline-separated assignments such as "READY=1" — to the service
// manager, as sd_notify(3) does: one datagram to the unix socket named by
// $NOTIFY_SOCKET, a path or, starting with '@', an abstract socket name. Without
// $NOTIFY_SOCKET (not started by systemd, or not as Type=notify) it does nothing.
func Notify(state string) error {
	name := os.Getenv(NotifySocketEnv)
	if name == "" {
		return nil
	}
	if name[0] != '/' && name[0] != '@' {
		return fmt.Errorf("$%s=%q: neither a socket path nor an abstract socket (@name)", NotifySocketEnv, name)
	}
	// The net package turns a leading '@' into the abstract namespace's NUL byte.
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("notify %s: %w", name, err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(state)); err != nil {
		return fmt.Errorf("notify %s: %w", name, err)
	}
	return nil
}

// reloadingState is the notification that a reload starts: RELOADING=1 with the
// CLOCK_MONOTONIC time in µs, which systemd (version 253 on) wants alongside it.
func reloadingState() string {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return "RELOADING=1"
	}
	return fmt.Sprintf("RELOADING=1\nMONOTONIC_USEC=%d", ts.Nano()/1000)
}

// statusLine makes a STATUS= assignment of s, on one line.
func statusLine(s string) string {
	return "STATUS=" + strings.ReplaceAll(s, "\n", " ")
}
