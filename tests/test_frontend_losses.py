"""rf.cross_entropy (logits, probs, log-probs; sparse and dense targets) and rf.label_smoothing on TensorFlow and
PyTorch against NumPy, on ragged batches whose padded frames hold garbage; losses summed over time count only the
valid frames; bad arguments get clear errors."""

import numpy as np
import pytest

from frontend_harness import Input, ragged_batch, run_both
from netcompiler import frontend as rf
from netcompiler.backends import get_backend
from netcompiler.tensor import Dim, batch_dim

TIME = Dim(None, name="time")
CLASSES = Dim(4, name="classes")
LENGTHS = {TIME: [3, 5, 1, 0]}
DIMS = [batch_dim, TIME]
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning",
                                        "ignore:invalid value encountered:RuntimeWarning")


def _log_softmax(x):
    x = x.astype(np.float64)
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def _batch(sparse: bool):
    target = Input(DIMS, "int32", sparse_dim=CLASSES) if sparse else Input(DIMS + [CLASSES])
    batch = ragged_batch({"logits": Input(DIMS + [CLASSES]), "target": target}, LENGTHS, seed=4)
    if not sparse:  # a distribution over the classes (garbage stays on padded frames)
        t = batch.inputs["target"].value
        batch.inputs["target"].value = np.where(batch.valid(DIMS + [CLASSES], t.shape),
                                                np.exp(_log_softmax(t)), t).astype("float32")
    return batch


def _estimate(kind, logits):
    if kind == "probs":
        return rf.softmax(logits, axis=CLASSES)
    if kind == "log-probs":
        return rf.log_softmax(logits, axis=CLASSES)
    return logits


@pytest.mark.parametrize("sparse", [True, False], ids=["sparse", "dense"])
@pytest.mark.parametrize("kind", ["logits", "probs", "log-probs"])
def test_cross_entropy_over_time(kind, sparse):
    batch = _batch(sparse)

    def call(model, logits, target):
        ce = rf.cross_entropy(estimated=_estimate(kind, logits), target=target, axis=CLASSES, estimated_type=kind)
        return {"ce": ce, "sum": rf.reduce_sum(ce, axis=TIME)}

    result, _ = run_both(lambda: None, call, batch)
    log_probs = _log_softmax(batch.inputs["logits"].value)
    target = batch.inputs["target"].value
    if sparse:
        want = -np.take_along_axis(log_probs, np.clip(target, 0, 3)[..., None], -1)[..., 0]
    else:
        want = -(target * log_probs).sum(-1)
    valid = batch.valid(DIMS, want.shape)
    assert result.dims["ce"] == (batch_dim, TIME)
    np.testing.assert_array_equal(result.valid["ce"], valid)
    np.testing.assert_allclose(result.outputs["ce"][valid], want[valid], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(result.outputs["sum"], np.where(valid, want, 0).sum(1), rtol=1e-5, atol=1e-5)
    # d objective / d logits is zero on padded frames (the loss there is masked out)
    pad = ~batch.valid(DIMS + [CLASSES], batch.inputs["logits"].value.shape)
    assert np.all(result.grads["input:logits"][pad] == 0)
    assert np.abs(result.grads["input:logits"][~pad]).max() > 0


def test_cross_entropy_gradient_of_logits_is_softmax_minus_target():
    batch = _batch(sparse=True)
    result, _ = run_both(lambda: None, lambda m, logits, target: rf.reduce_sum(
        rf.cross_entropy(estimated=logits, target=target, axis=CLASSES, estimated_type="logits"), axis=TIME), batch)
    # objective = sum_b w_b * sum_t ce[b, t]: the weights of a [B] output are 0.3, 0.4, ...
    w = (np.arange(4) % 7) * 0.1 + 0.3
    probs = np.exp(_log_softmax(batch.inputs["logits"].value))
    onehot = np.eye(4)[np.clip(batch.inputs["target"].value, 0, 3)]
    valid = batch.valid(DIMS, probs.shape[:2])[..., None]
    want = w[:, None, None] * (probs - onehot) * valid
    np.testing.assert_allclose(result.grads["input:logits"], want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("sparse", [True, False], ids=["sparse", "dense"])
def test_label_smoothing(sparse):
    batch = _batch(sparse)
    result, _ = run_both(lambda: None, lambda m, logits, target: {
        "smoothed": rf.label_smoothing(target, 0.2, axis=CLASSES),
        "ce": rf.cross_entropy(estimated=logits, target=rf.label_smoothing(target, 0.2), axis=CLASSES,
                               estimated_type="logits")}, batch)
    target = batch.inputs["target"].value
    dist = np.eye(4)[np.clip(target, 0, 3)] if sparse else target
    want = dist * 0.8 + 0.05
    dims = DIMS + [CLASSES]
    valid = batch.valid(dims, want.shape)
    np.testing.assert_allclose(result.value("smoothed", dims)[valid], want[valid], rtol=1e-6, atol=1e-6)
    if sparse:
        np.testing.assert_allclose(result.value("smoothed", dims)[valid].reshape(-1, 4).sum(-1), 1.0, rtol=1e-6)
    ce = -(want * _log_softmax(batch.inputs["logits"].value)).sum(-1)
    v = batch.valid(DIMS, ce.shape)
    np.testing.assert_allclose(result.value("ce", DIMS)[v], ce[v], rtol=1e-5, atol=1e-5)


def test_loss_argument_errors():
    b = get_backend("tensorflow")
    other = Dim(4, name="other")
    with rf.RunContext(b):
        logits = rf.convert_to_tensor(np.zeros((2, 4), "float32"), dims=[batch_dim, CLASSES])
        labels = rf.convert_to_tensor(np.zeros(2, "int32"), dims=[batch_dim], sparse_dim=other)
        with pytest.raises(ValueError, match="estimated_type must be one of"):
            rf.cross_entropy(estimated=logits, target=labels, axis=CLASSES, estimated_type="softmax")
        with pytest.raises(ValueError, match="indices into .*'other'.*not into the axis .*'classes'"):
            rf.cross_entropy(estimated=logits, target=labels, axis=CLASSES, estimated_type="logits")
        with pytest.raises(ValueError, match="has no axis .*'other'"):
            rf.cross_entropy(estimated=logits, target=labels, axis=other, estimated_type="logits")
        dense = rf.convert_to_tensor(np.zeros((2, 4), "float32"), dims=[batch_dim, other])
        with pytest.raises(ValueError, match="dense target .* has no axis"):
            rf.cross_entropy(estimated=logits, target=dense, axis=CLASSES, estimated_type="probs")
        with pytest.raises(ValueError, match="indices are into .*'other'"):
            rf.label_smoothing(labels, 0.1, axis=CLASSES)
