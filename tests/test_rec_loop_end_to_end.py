"""End-to-end: configs whose recurrence is a loop body (a rec layer with a network-dict unit, `prev:`) train with
`compile-net` (slow; a few seconds each on 2 cores).

The shipped configs/12ax-loop-rnn.py and configs/12ax-loop-lstm.py go over 3 epochs from dev fer 0.14 to 0.10
(explicit RNN) and to 0.03 (explicit LSTM); both must improve on their first epoch.
"""

import pytest

from test_end_to_end import REPO, assert_trained, compile_net

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("config", ["12ax-loop-rnn", "12ax-loop-lstm"])
def test_loop_body_config_trains(config, tmp_path):
    prefix = str(tmp_path / "out" / "model")
    run = compile_net(REPO / "configs" / f"{config}.py", "++num_epochs", "3", "++model", prefix, cwd=tmp_path)
    lines = assert_trained(run, 3)
    dev_ce = [float(m["dev_ce"]) for m in lines]
    assert dev_ce[-1] < dev_ce[0], run
    assert (tmp_path / "out" / "model.003.index").exists()
