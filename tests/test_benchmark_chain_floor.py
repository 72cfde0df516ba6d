"""benchmarks/chain_floor.py on a 4-layer chain: every mode traces (or, eagerly, does not) and steps twice, and the
step graph's node count per layer orders as the README's tables read: updates only < stacked parameters with one
shared layer function < layers sharing one function < stacked parameters < layers written out (at 5000 layers 8, 4,
14, 42 and 52 per layer; at 4 layers the step's fixed nodes put the updates-only floor first)."""

import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))

import chain_floor  # noqa: E402


def nodes_per_layer(mode, capsys):
    chain_floor.main(mode, 4)
    out = capsys.readouterr().out
    assert [line.split()[0] for line in out.splitlines()[:5]] == ["imports", "variables", "trace", "first", "next"]
    match = re.search(rf"^{mode} chain of 4: peak \d+ MB, \d+ graph nodes \(([\d.]+) per layer\)$", out, re.M)
    assert match, out
    return float(match.group(1))


def test_each_mode_steps_and_sharing_the_layers_trace_saves_ops(capsys):
    floor, shared, inline, stacked, grouped, eager = (
        nodes_per_layer(mode, capsys) for mode in ("floor", "shared", "inline", "stacked", "grouped", "eager"))
    assert floor < grouped < shared < stacked < inline
    assert eager == 0
