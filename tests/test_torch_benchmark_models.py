"""The hand-written PyTorch models of benchmarks/torch_step.py are the models netcompiler's torch backend trains:
with netcompiler's weights copied in, loss and every gradient agree on a ragged batch (at the quick sizes). The
speed ratios of `torch_step.py` and `run.py` mean nothing if they do not."""

import os
import sys

import pytest

torch = pytest.importorskip("torch")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))

import torch_step  # noqa: E402


@pytest.mark.parametrize("name", sorted(torch_step.QUICK))
def test_hand_written_model_agrees_with_netcompiler(name):
    size, frames, settings = torch_step.QUICK[name]
    sides, extra = torch_step.build_sides(name, settings)
    assert sides["nc"][1] == sides["hand"][1], "parameter counts differ"
    batch = torch_step.batches(1, size, frames, extra["dim"], extra["classes"], seed=3)[0]
    assert int(batch[2].min()) < frames  # ragged: padded frames must not count
    check = torch_step.check_agreement(extra, batch)
    assert check["grad_rel_err"] < 1e-3


def test_agreement_check_sees_a_different_model():
    size, frames, settings = torch_step.QUICK["conv"]
    sides, extra = torch_step.build_sides("conv", settings)
    # the second conv's filter copied with its sign flipped: a model that differs in one weight
    extra["mapping"] = [(n, p, (lambda w, f=f: -f(w)) if n == "conv1/W" else f) for n, p, f in extra["mapping"]]
    batch = torch_step.batches(1, size, frames, extra["dim"], extra["classes"])[0]
    with pytest.raises(AssertionError):
        torch_step.check_agreement(extra, batch)
