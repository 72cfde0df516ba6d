"""End-to-end: RETURNN's explicit-RNN and explicit-LSTM demos (a rec layer whose unit is a network dict), copied
to configs/returnn-demos/ with only their import line changed, train with `compile-net` (slow; ~10 s each on 2 cores).

Thresholds were measured over 3 epochs of the demos' own 1000 sequences: the explicit RNN (learning rate
0.0005) gets from dev fer 0.40 to 0.16, the explicit LSTM (0.01) from 0.13 to 0.12 (12AX's majority class
alone gives about 0.14); both must improve on their first epoch.
"""

import pytest

from test_end_to_end import REPO, assert_trained, compile_net

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("demo", ["demo-tf-rec-explicit-rnn", "demo-tf-rec-explicit-lstm"])
def test_returnn_explicit_rec_demo_trains(demo, tmp_path):
    prefix = str(tmp_path / "out" / "model")
    run = compile_net(REPO / "configs" / "returnn-demos" / f"{demo}.py", "++num_epochs", "3", "++model", prefix, cwd=tmp_path)
    lines = assert_trained(run, 3)
    dev_ce = [float(m["dev_ce"]) for m in lines]
    assert dev_ce[-1] < dev_ce[0], run
    assert (tmp_path / "out" / "model.003.index").exists()
