package pcihost

import (
	"fmt"
	"path/filepath"

	"github.com/jaypipes/pcidb"

	"github.com/uiod/uiod/pci"
)

// idDB names vendors, devices and classes from the pci.ids database under the root.
type idDB struct {
	db *pcidb.DB
}

// pciIDsPaths are the places pcidb looks under its chroot, in its order.
var pciIDsPaths = []string{
	"usr/share/hwdata/pci.ids",
	"usr/share/misc/pci.ids",
	"usr/share/hwdata/pci.ids.gz",
	"usr/share/misc/pci.ids.gz",
}

// maxPCIIDsSize bounds the pci.ids file handed to pcidb (today's is about 1.5 MiB).
const maxPCIIDsSize = 64 << 20

// names returns the pci.ids database, loading it on first use. A missing or unreadable
// database gives one warning and an empty database: devices then show ids only.
//
// pcidb's own discovery looks in the user's cache directory before its chroot and honours
// PCIDB_* environment variables, so a host run could name devices from a file outside the
// root. We search the same paths under the root ourselves and hand pcidb the file.
func (h *Host) names() *idDB {
	h.idsOnce.Do(func() {
		h.ids = &idDB{}
		var found string
		for _, p := range pciIDsPaths {
			if fi, err := h.stat(p); err == nil && fi.Mode().IsRegular() && fi.Size() <= maxPCIIDsSize {
				found, err = h.Path(p)
				if err == nil {
					break
				}
			}
		}
		if found == "" {
			h.warn(fmt.Sprintf("no pci.ids database under %s (looked in %s, ...): showing ids only",
				h.root, filepath.Join(h.root, pciIDsPaths[1])))
			return
		}
		db, err := loadPCIDB(h.root, found)
		if err != nil {
			h.warn(fmt.Sprintf("load %s: %v: showing ids only", found, err))
			return
		}
		h.ids.db = db
	})
	return h.ids
}

// loadPCIDB loads a pci.ids file. pcidb's parser indexes lines without checking their
// length, so a corrupt file is turned from a panic into an error.
func loadPCIDB(root, path string) (db *pcidb.DB, err error) {
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, fmt.Errorf("%w pci.ids: %v", pci.ErrMalformed, r)
		}
	}()
	return pcidb.New(pcidb.WithChroot(root), pcidb.WithPath(path), &pcidb.WithOption{EnableNetworkFetch: new(false)})
}

// vendor returns the vendor's name, or "".
func (d *idDB) vendor(v pci.ID) string {
	if d.db == nil {
		return ""
	}
	if x, ok := d.db.Vendors[v.String()]; ok {
		return x.Name
	}
	return ""
}

// product returns the device's name, or "".
func (d *idDB) product(v, dev pci.ID) string {
	if d.db == nil {
		return ""
	}
	if x, ok := d.db.Products[v.String()+dev.String()]; ok {
		return x.Name
	}
	return ""
}

// class returns the most specific name of the class (subclass name if known), or "".
func (d *idDB) class(c pci.Class) string {
	if d.db == nil {
		return ""
	}
	x, ok := d.db.Classes[fmt.Sprintf("%02x", c.Base())]
	if !ok {
		return ""
	}
	sub := fmt.Sprintf("%02x", c.Sub())
	for _, s := range x.Subclasses {
		if s.ID == sub {
			return s.Name
		}
	}
	return x.Name
}
