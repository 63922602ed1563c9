package config

import (
	"fmt"

	"github.com/uiod/uiod/nic/igbvf"
)

// checkVF refuses what an 82576 virtual function (nic: igbvf) cannot do: more than its
// one queue pair, INTx (a VF has no interrupt pin, so uio_pci_generic cannot drive it
// either) and promiscuous mode (its PF filters unicast frames by the VF's address).
func checkVF(errs *fieldErrors, i int, p *Port) {
	path := func(key string) string { return fmt.Sprintf("ports[%d].%s", i, key) }
	if p.RxQueues > igbvf.MaxQueues {
		errs.add(path("rx_queues"), p.RxQueues, "an 82576 VF (nic: igbvf) takes one queue pair")
	}
	if p.TxQueues > igbvf.MaxQueues {
		errs.add(path("tx_queues"), p.TxQueues, "an 82576 VF (nic: igbvf) takes one queue pair")
	}
	if p.Interrupts == InterruptsINTx {
		errs.add(path("interrupts"), p.Interrupts, "a virtual function (nic: igbvf) has no INTx")
	}
	if p.Driver == DriverUIO {
		errs.add(path("driver"), p.Driver, "a virtual function (nic: igbvf) has no INTx, the only interrupt uio_pci_generic delivers: use vfio-pci")
	}
	if p.Promiscuous {
		errs.add(path("promiscuous"), p.Promiscuous, "a virtual function (nic: igbvf) receives only its own address, broadcast and multicast: its PF filters the rest")
	}
}
