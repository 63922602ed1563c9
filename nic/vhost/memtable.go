package vhost

// memRegion is one region of the front end's memory, mapped here: mem[i] is guest-physical
// address gpa+i and front-end virtual address uva+i.
type memRegion struct {
	gpa, uva uint64
	mem      []byte // size bytes (the mapping's part past mmap_offset)
	mapping  []byte // the whole mapping, for unmap
	src      region // as SET_MEM_TABLE sent it
	dev, ino uint64 // the file's identity
}

// memTable is the front end's memory as SET_MEM_TABLE described it. It is immutable once
// built: a new table replaces it whole.
type memTable struct {
	regions []memRegion
}

// gpaChunk returns the longest slice of mapped memory that starts at guest-physical
// address a and holds at most n bytes, or nil when a is in no region.
func (t *memTable) gpaChunk(a uint64, n uint32) []byte {
	for i := range t.regions {
		r := &t.regions[i]
		if off := a - r.gpa; a >= r.gpa && off < uint64(len(r.mem)) {
			b := r.mem[off:]
			if uint64(len(b)) > uint64(n) {
				b = b[:n]
			}
			return b
		}
	}
	return nil
}

// uvaRange returns the n bytes at front-end virtual address a, or nil unless they lie in
// one region.
func (t *memTable) uvaRange(a uint64, n int) []byte {
	for i := range t.regions {
		r := &t.regions[i]
		if off := a - r.uva; a >= r.uva && off < uint64(len(r.mem)) {
			if uint64(len(r.mem))-off < uint64(n) {
				return nil
			}
			return r.mem[off : off+uint64(n) : off+uint64(n)]
		}
	}
	return nil
}

// gpa translates the n bytes at guest-physical address a, which must lie in one region,
// into the mapped memory: the region of the ring's last translation first, then the
// table's. It returns nil when no region holds them all (a buffer across regions, or
// outside every one; copyOut and copyIn take those chunk by chunk). The slice is the
// front end's memory: touch it only in an armed section (guard.go).
func (r *vring) gpa(a uint64, n uint32) []byte {
	if b := r.last.get(a, n); b != nil {
		return b
	}
	return r.gpaMiss(a, n)
}

// gpaMiss is gpa's look-up in the table, which remembers the region it finds.
func (r *vring) gpaMiss(a uint64, n uint32) []byte {
	if r.mem == nil {
		return nil
	}
	for i := range r.mem.regions {
		g := &r.mem.regions[i]
		if off := a - g.gpa; a >= g.gpa && off < uint64(len(g.mem)) {
			if uint64(len(g.mem))-off < uint64(n) {
				return nil
			}
			r.last = cacheRegion(g.gpa, g.mem)
			return g.mem[off : off+uint64(n) : off+uint64(n)]
		}
	}
	return nil
}
