package ring

// Writer32 is the part of a pci.Region a queue needs: a 32-bit register write.
type Writer32 interface {
	Write32(off uint32, v uint32)
}

// Doorbell is a queue's tail register (RDT or TDT). The ring code writes it at most once
// per burst; ixgbe and igb differ only in its offset.
type Doorbell struct {
	Reg Writer32
	Off uint32
}

// Ring writes the new tail index.
func (d Doorbell) Ring(tail uint32) { d.Reg.Write32(d.Off, tail) }
