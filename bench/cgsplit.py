#!/usr/bin/env python3
"""cgsplit.py STEP FILE:FRAMES...: splits the forwarding step's count in callgrind output
files (bench/callgrind.sh's driver mode, one file per frame count) into its parts and prints
each part's instructions per frame in each file and its slope between the first and the
last (the per-frame cost with the warm-up taken out):

  driver rx    the step's calls of the port's RxBurst (the ring's refill inside it)
  driver tx    the step's calls of TxBurst (the ring's Reclaim inside it)
  fake nic     the step's calls of the device side's CompleteRx and CompleteTx (the
               write-backs the "NIC" stores, the model DMA stores included)
  step's own   the step's own instructions and its other calls (freeing what TX refused)

The four parts are the step's direct calls as callgrind recorded them (each call line's
inclusive cost), so they add up to the step's count: the script checks the sum against
bench/cgincl.py's count of the step and fails if they differ by more than 0.1 %. The
indented rows (the Intel ring's functions, absent for other drivers) are cgincl.py's
counts."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cgincl  # noqa: E402

PARTS = ["driver rx", "driver tx", "fake nic", "step's own"]
INNER = {
    "driver rx": [("  ring RxQueue.Burst", "ring.(*RxQueue).Burst"), ("    of it refill", "ring.(*RxQueue).refill")],
    "driver tx": [("  ring TxQueue.Burst", "ring.(*TxQueue).Burst"), ("    of it Reclaim", "ring.(*TxQueue).Reclaim")],
}


def part(callee):
    if callee.endswith("RxBurst"):
        return "driver rx"
    if callee.endswith("TxBurst"):
        return "driver tx"
    if ".Complete" in callee:
        return "fake nic"
    return "step's own"


def split(path, step):
    """The step's parts, the inner rows and the step's inclusive count in one file."""
    self_cost, calls, ncalls = cgincl.parse(path)
    funcs = self_cost.keys() | calls.keys()
    names = [f for f in funcs if f.endswith(step)]
    if len(names) != 1:
        sys.exit(f"cgsplit.py: {len(names)} functions named {step} in {path}")
    f = names[0]
    parts = dict.fromkeys(PARTS, 0)
    parts["step's own"] = self_cost[f]
    for c, v in calls[f].items():
        parts[part(c)] += v
    cost = cgincl.inclusive(self_cost, calls, ncalls)
    inner = {label: sum(cost(g) for g in funcs if g.endswith(want))
             for rows in INNER.values() for label, want in rows}
    return parts, inner, cost(f)


def main():
    step, runs = sys.argv[1], []
    for arg in sys.argv[2:]:
        path, frames = arg.rsplit(":", 1)
        runs.append((int(frames), *split(path, step)))
    head = f"{'per frame':<24}" + "".join(f"{'frames=' + str(n):>15}" for n, *_ in runs)
    print(head + (f"{'slope':>9}" if len(runs) > 1 else ""))

    def row(label, values):
        line = f"{label:<24}" + "".join(f"{v / n:>15.1f}" for (n, *_), v in zip(runs, values))
        if len(runs) > 1:
            line += f"{(values[-1] - values[0]) / (runs[-1][0] - runs[0][0]):>9.1f}"
        print(line)

    for p in PARTS:
        row(p, [r[1][p] for r in runs])
        for label, _ in INNER.get(p, []):
            if any(r[2][label] for r in runs):
                row(label, [r[2][label] for r in runs])
        if p == "driver tx":
            row("driver rx + tx", [r[1]["driver rx"] + r[1]["driver tx"] for r in runs])
    row("sum of the parts", [sum(r[1].values()) for r in runs])
    row("step (inclusive)", [r[3] for r in runs])
    for n, parts, _, total in runs:
        if abs(sum(parts.values()) - total) > total / 1000:
            sys.exit(f"cgsplit.py: at {n} frames the parts sum to {sum(parts.values())}, the step counts {total:.0f}")


if __name__ == "__main__":
    main()
