package daemon

// The NIC drivers register with the registry the daemon opens ports through, as the
// uiod program's main does.
import _ "github.com/uiod/uiod/nic/drivers"
