package config

// The NIC drivers register with the registry the validation asks (nicfacts.go), as the
// uiod program's main does.
import _ "github.com/uiod/uiod/nic/drivers"
