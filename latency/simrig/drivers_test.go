package simrig

// The NIC drivers register with the registry the bench opens its ports through, as the
// uiod program's main does.
import _ "github.com/uiod/uiod/nic/drivers"
