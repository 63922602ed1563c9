package ixgbe

import (
	"testing"

	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/nictest"
	"github.com/uiod/uiod/pci"
	simixgbe "github.com/uiod/uiod/sim/ixgbe"
)

// driver is this driver on the 82599 model, for the shared suites.
var driver = nictest.Driver{
	Open: func(dev pci.Device, cfg nic.Config) (nictest.Port, error) {
		p, err := Open(dev, cfg)
		if err != nil {
			return nil, err
		}
		return p, nil
	},
	Flavor:    simixgbe.X82599,
	SpeedMbps: 10000,
}

func TestOpenStrict(t *testing.T)             { nictest.Open(t, driver) }
func TestForwardByteExact(t *testing.T)       { nictest.Forward(t, driver) }
func TestInterruptsMSIX(t *testing.T)         { nictest.InterruptsMSIX(t, driver) }
func TestInterruptsINTx(t *testing.T)         { nictest.InterruptsINTx(t, driver) }
func TestInterruptModeration(t *testing.T)    { nictest.Moderation(t, driver) }
func TestLinkChange(t *testing.T)             { nictest.LinkChange(t, driver) }
func TestFaults(t *testing.T)                 { nictest.Faults(t, driver) }
func TestIOMMUCatchesBadAddress(t *testing.T) { nictest.IOMMU(t, driver) }
func TestRSS(t *testing.T)                    { nictest.RSS(t, driver) }
func TestForwardAcrossAddressSpaces(t *testing.T) {
	nictest.AcrossAddressSpaces(t, driver)
}
