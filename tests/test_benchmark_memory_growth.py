"""benchmarks/memory_growth.py: the batches it trains on (a new T per batch, ragged lengths) and one short run of
the script on the torch sides."""

import os
import subprocess
import sys

import pytest

BENCHMARKS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks")
sys.path.insert(0, BENCHMARKS)

import memory_growth  # noqa: E402
from models import Batches  # noqa: E402


def test_batches_change_their_length_and_keep_ragged_sequences():
    spec = Batches(1, 4, 20, 3, 7)
    batches = list(memory_growth.varying_batches(spec, 30))
    assert len(batches) == 30
    frames = [x.shape[1] for x, _, _ in batches]
    assert min(frames) >= 10 and max(frames) <= 30 and len(set(frames)) > 5
    for x, y, lengths in batches:
        assert x.shape == (4, x.shape[1], 3) and y.shape == (4, x.shape[1]) and y.max() < 7
        assert lengths[0] == x.shape[1] and (lengths >= x.shape[1] // 2).all() and (lengths <= x.shape[1]).all()


@pytest.mark.slow
def test_a_short_run_prints_both_sides_and_the_peak_ratio():
    pytest.importorskip("torch", reason="PyTorch is not installed (pip install -e '.[torch]')")
    run = subprocess.run([sys.executable, os.path.join(BENCHMARKS, "memory_growth.py"), "--backends", "torch",
                          "--steps", "2", "--every", "1"], capture_output=True, text=True, timeout=600)
    assert run.returncode in (0, 1), run.stderr  # 1: the goal missed after 2 steps, not a crash
    assert "blstm on torch: 2 steps, resident MB at steps 1, 2" in run.stdout
    assert "nc-torch" in run.stdout and "hand-torch" in run.stdout and "peak ratio" in run.stdout
