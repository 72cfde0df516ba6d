"""configs/transformer-enc-rf.py (a frontend Transformer encoder on 12AX): the same first-step loss on PyTorch and
on TensorFlow through the layer dict, dropout in effect in training, and a small epoch through compile-net on both
backends with the same scores."""

from __future__ import annotations

import os

import numpy as np
import pytest

from netcompiler.config import load_config
from test_frontend_configs import BACKENDS, _compile_net, _epoch_scores, _need, _raw_to_numpy

CONFIG = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "configs",
                      "transformer-enc-rf.py")


def _step_model(backend, *overrides):
    from netcompiler.engine.frontend_layers import LayerDictModel, frontend_step_model

    model = frontend_step_model(load_config(CONFIG, list(overrides)), backend, seed=42)
    if backend == "tensorflow":
        assert isinstance(model, LayerDictModel), "the TF side must go through the layer dict"
    return model


def _ragged_batch(seed=0):
    """12AX-like one-hot frames on ragged lengths; padding holds garbage (large values, class 1)."""
    rng = np.random.RandomState(seed)
    lengths = np.array([7, 3, 5], dtype="int32")
    data = np.eye(9, dtype="float32")[rng.randint(0, 9, size=(3, 7))]
    classes = rng.randint(0, 2, size=(3, 7)).astype("int32")
    for b, length in enumerate(lengths):
        data[b, length:], classes[b, length:] = 1e4, 1
    return {"data": data, "classes": classes}, {"data": lengths, "classes": lengths}


def _first_step(backend, training, *overrides):
    model = _step_model(backend, *overrides)
    inputs, lengths = _ragged_batch()
    if backend == "torch":
        import torch

        inputs, lengths = ({k: torch.from_numpy(v) for k, v in d.items()} for d in (inputs, lengths))
    losses, objective = model.step_losses(inputs, lengths, training=training)
    by_name = {v.name: v for v in losses}
    return float(_raw_to_numpy(backend, objective)), float(_raw_to_numpy(backend, by_name["ce"].num_frames))


def test_first_step_loss_is_the_same_on_both_backends():
    for backend in BACKENDS:
        _need(backend)
    results = {backend: _first_step(backend, True, "++dropout", "0") for backend in BACKENDS}
    assert results["torch"][1] == results["tensorflow"][1] == 15  # valid frames only
    assert results["torch"][0] == pytest.approx(results["tensorflow"][0], rel=1e-5)
    assert 15 * 0.3 < results["torch"][0] < 15 * 3.0  # summed CE of 2 classes near log(2) per frame at the start
    # dropout 0.1 (the config's) changes the training loss but not the evaluation one
    assert _first_step("torch", True)[0] != pytest.approx(results["torch"][0], rel=1e-4)
    assert _first_step("torch", False)[0] == pytest.approx(results["torch"][0], rel=1e-5)


def test_small_epoch_on_both_backends_gives_the_same_scores(tmp_path):
    for backend in BACKENDS:
        _need(backend)
    scores = {}
    for backend in BACKENDS:
        lines = _compile_net(CONFIG, tmp_path / backend, "++num_epochs", 1, "++backend", backend, "++dropout", 0,
                             seqs=40)
        scores[backend] = _epoch_scores(lines)[1]
        assert set(scores[backend]) == {"train ce", "train fer", "dev ce", "dev fer"}
        assert 0.0 < scores[backend]["dev ce"] < 1.0 and 0.0 <= scores[backend]["dev fer"] <= 1.0
    for key in scores["torch"]:
        assert scores["torch"][key] == pytest.approx(scores["tensorflow"][key], abs=2e-3), key
