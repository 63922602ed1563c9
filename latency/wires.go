package latency

import (
	"context"
	"fmt"
	"io"

	"github.com/uiod/uiod/wire"
)

// RunWires opens the wires tx and rx name and measures one run from tx to rx (see Run),
// writing a line that says what it measures to progress. With rx equal to tx the probes
// come back on the same wire, except on an in-process pair wire, whose two opens are its
// two ends: they go out on one and come back on the other. A run that sent no probe is
// an error.
func RunWires(ctx context.Context, progress io.Writer, tx, rx wire.Spec, cfg Config) (*Result, error) {
	txp, err := tx.Open()
	if err != nil {
		return nil, err
	}
	defer txp.Close()
	rxp := txp
	if rx != tx || tx.Kind == wire.KindPair {
		if rxp, err = rx.Open(); err != nil {
			return nil, err
		}
		defer rxp.Close()
	}
	what := fmt.Sprintf("%d probes", cfg.Count)
	if cfg.Duration > 0 {
		what = cfg.Duration.String()
	}
	fmt.Fprintf(progress, "latency: %s → %s, %s, %s\n", tx, rx, cfg.Pattern, what)
	res, err := Run(ctx, txp, rxp, cfg)
	if err != nil {
		return nil, err
	}
	if res.Sent == 0 {
		return res, fmt.Errorf("no probe could be sent on %s (%d send errors)", tx, res.SendErrors)
	}
	return res, nil
}
