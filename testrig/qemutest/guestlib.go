package qemutest

import _ "embed"

// GuestLib is the shell library every guest gets as /etc/uiod/lib.sh (guestlib.sh): the
// functions the guest scripts share to report to the host (say, fail, snapshot), to find
// the NICs (nic, driver) and to run the daemon (conf_head, run_daemon, wait_links,
// serve_snapshots, stop_daemon).
//
//go:embed guestlib.sh
var GuestLib string
