package soak

// The NIC drivers register with the registry that configuration and the daemon ask,
// as the uiod program's main does.
import _ "github.com/uiod/uiod/nic/drivers"
