package pcihost

// SetOpenat2 turns the openat2 path of contained opens on or off, so that tests cover
// the component-walk fallback too.
func SetOpenat2(on bool) { noOpenat2.Store(!on) }
