#!/usr/bin/env python3
"""cgincl.py FILE FUNC...: the inclusive instruction count of each named function in a
callgrind output file (a name matches by its ending), counted so that goroutine switches
do not add other code to it. Used by bench/vhostcg.sh.

callgrind follows calls by the stack pointer; a Go goroutine switch inside a function
(a preemption at a prologue's stack check, morestack, mcall) makes it record calls that
never happened (RxBurst "calling" the benchmark's loop, a two-line function "calling"
RxBurst), whose costs then inflate the inclusive counts that callgrind_annotate prints.
So the count here is built from parts that cannot be polluted:

  cost(f) = self(f) + sum over f's callees c that are uiod's own (non-test) code or a
            runtime leaf (memmove, gorecover, runtime/debug) of
              the call's cost,                         if c calls nothing (exact), else
              calls(f->c) * cost(c) / calls(all->c)    (c's clean cost per call)

Self costs (which instructions ran in which function) are exact whatever the stack does.
Recursion markers ('2) are merged, a call back into a function already on the path is
skipped, and every block of a function is counted whatever source file its inlined code
came from (callgrind_annotate lists each file's part as a function of its own)."""
import re
import sys
from collections import defaultdict


def parse(path):
    names = {}
    self_cost = defaultdict(int)
    calls = defaultdict(lambda: defaultdict(int))  # caller -> callee -> inclusive cost
    ncalls = defaultdict(lambda: defaultdict(int))  # caller -> callee -> count
    fn = cfn = None
    in_call = False
    npos = 1

    def name(v):
        m = re.match(r"\((\d+)\)(?: (.*))?", v)
        if m:
            if m.group(2) is not None:
                names[m.group(1)] = m.group(2)
            v = names[m.group(1)]
        return re.sub(r"'\d+$", "", v)

    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            if line.startswith("positions:"):
                npos = len(line.split()) - 1
            elif line.startswith("fn="):
                fn = name(line[3:])
            elif line.startswith("cfn="):
                cfn = name(line[4:])
            elif line.startswith("calls="):
                in_call = True
                if cfn != fn:
                    ncalls[fn][cfn] += int(line[6:].split()[0])
            elif line[0].isdigit() or line[0] in "+-*":
                parts = line.split()
                cost = int(parts[npos]) if len(parts) > npos else 0
                if in_call:
                    if cfn != fn:
                        calls[fn][cfn] += cost
                    in_call = False
                else:
                    self_cost[fn] += cost
    return self_cost, calls, ncalls


OWN = re.compile(r"^github\.com/uiod/uiod/nic[./]")
TEST = re.compile(r"Benchmark|Test|Fuzz|\(\*frontend\)|\.func\d")
LEAF_RT = re.compile(r"^(runtime\.memmove|runtime\.gorecover|runtime/debug\.|sync\.|internal/sync\.)")


def counted(c):
    return (OWN.match(c) and not TEST.search(c)) or LEAF_RT.match(c)


def inclusive(self_cost, calls, ncalls):
    """The clean inclusive count of a function (the module's docstring), as a function of
    its name."""
    calls_in = defaultdict(int)
    for f in ncalls:
        for c, k in ncalls[f].items():
            calls_in[c] += k
    memo = {}

    def cost(f, path=frozenset()):
        if f in memo:
            return memo[f]
        total = self_cost[f]
        for c, v in calls[f].items():
            if not counted(c) or c in path:
                continue
            if not calls[c]:
                total += v
            elif calls_in[c]:
                total += ncalls[f][c] * cost(c, path | {f}) / calls_in[c]
        memo[f] = total
        return total

    return cost


def main():
    verbose = len(sys.argv) > 1 and sys.argv[1] == "-v"
    args = sys.argv[2:] if verbose else sys.argv[1:]
    path, funcs = args[0], args[1:]
    self_cost, calls, ncalls = parse(path)
    cost = inclusive(self_cost, calls, ncalls)
    for want in funcs:
        for f in sorted(n for n in self_cost.keys() | calls.keys() if n.endswith(want)):
            print(f"{cost(f):.0f} {f}")
            if verbose:
                print(f"    self {self_cost[f]}")
                for c, v in sorted(calls[f].items(), key=lambda kv: -kv[1]):
                    mark = "" if counted(c) else "  (not counted)"
                    print(f"    {v} {c} calls={ncalls[f][c]}{mark}")


if __name__ == "__main__":
    main()
