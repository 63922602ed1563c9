package latency_test

import (
	"context"
	"fmt"
	"time"

	"github.com/uiod/uiod/latency"
	"github.com/uiod/uiod/wire"
)

// Measure an in-memory wire: 100 probes, 200 µs apart, sent on one end and received on
// the other. MoonGen() gives the familiar one-line summary.
func ExampleRun() {
	tx, rx := wire.Pair()
	res, err := latency.Run(context.Background(), tx, rx, latency.Config{
		Label:   "pair",
		Count:   100,
		Pattern: latency.Constant{Gap: 200 * time.Microsecond},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Sent, res.Received, res.Lost)
	// Output: 100 100 0
}
