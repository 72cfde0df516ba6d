"""Checkpoints: RETURNN names, atomic writes, strict restore, clear errors."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf

from netcompiler.engine.checkpoints import CheckpointManager, latest_complete
from netcompiler.errors import CheckpointError

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Net(tf.Module):
    def __init__(self, n=3, extra=False, rename=False, seed=0):
        super().__init__()
        rng = np.random.RandomState(seed)
        self.w = tf.Variable(rng.randn(2, n).astype("float32"), name="w")
        self.layers = {"out": tf.Module()}
        setattr(self.layers["out"], "c" if rename else "b", tf.Variable(rng.randn(n).astype("float32"), name="b"))
        if extra:
            self.z = tf.Variable(1.0, name="z")


def trained(seed=0, **kwargs):
    """A net and an Adam optimizer that took one step (so it has state)."""
    net = Net(seed=seed, **kwargs)
    opt = tf.keras.optimizers.Adam(0.01)
    opt.build(net.trainable_variables)
    with tf.GradientTape() as tape:
        loss = sum(tf.reduce_sum(v ** 2) for v in net.trainable_variables)
    opt.apply_gradients(zip(tape.gradient(loss, net.trainable_variables), net.trainable_variables))
    return net, opt


def values(net):
    return [v.numpy().copy() for v in net.trainable_variables]


def test_save_names_and_restore_latest_round_trip(tmp_path):
    prefix = str(tmp_path / "model")
    manager = CheckpointManager(prefix)
    assert manager.restore_latest({"model": Net()}) is None
    net, opt = trained()
    assert manager.save(1, {"model": net, "optimizer": opt}, {"step": 7}) == prefix + ".001"
    net.w.assign_add(tf.ones_like(net.w))
    manager.save(2, {"model": net, "optimizer": opt}, {"step": 14, "rng": [1, 2, 3]})
    assert sorted(os.listdir(tmp_path)) == [
        "model.001.data-00000-of-00001", "model.001.index", "model.001.meta.json",
        "model.002.data-00000-of-00001", "model.002.index", "model.002.meta.json"]
    assert latest_complete(prefix) == (2, prefix + ".002")

    fresh, fresh_opt = trained(seed=1)
    assert CheckpointManager(prefix).restore_latest({"model": fresh, "optimizer": fresh_opt}) == (
        2, {"step": 14, "rng": [1, 2, 3]})
    for a, b in zip(values(fresh), values(net)):
        np.testing.assert_array_equal(a, b)
    assert int(fresh_opt.iterations.numpy()) == 1
    for a, b in zip(fresh_opt.variables, opt.variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_model_alone_can_be_restored_from_a_full_checkpoint(tmp_path):
    net, opt = trained()
    manager = CheckpointManager(str(tmp_path / "model"))
    path = manager.save(3, {"model": net, "optimizer": opt})
    fresh = Net(seed=5)
    assert manager.restore(path, {"model": fresh}) == {}
    np.testing.assert_array_equal(fresh.w.numpy(), net.w.numpy())


def test_older_checkpoints_are_untouched(tmp_path):
    manager = CheckpointManager(str(tmp_path / "model"))
    net, opt = trained()
    manager.save(1, {"model": net, "optimizer": opt})
    before = {n: (tmp_path / n).read_bytes() for n in os.listdir(tmp_path)}
    stats = {n: os.stat(tmp_path / n).st_mtime_ns for n in before}
    for epoch in (2, 3):
        net.w.assign_add(tf.ones_like(net.w))
        manager.save(epoch, {"model": net, "optimizer": opt})
    CheckpointManager(str(tmp_path / "model"))  # a new start cleans up leftovers only
    for name, content in before.items():
        assert (tmp_path / name).read_bytes() == content
        assert os.stat(tmp_path / name).st_mtime_ns == stats[name]
    with pytest.raises(CheckpointError, match="model.002' exists already"):
        manager.save(2, {"model": net})


def test_crash_between_data_and_index_leaves_no_complete_checkpoint(tmp_path, monkeypatch):
    prefix = str(tmp_path / "model")
    manager = CheckpointManager(prefix)
    net, opt = trained()
    manager.save(1, {"model": net, "optimizer": opt})

    real_rename = CheckpointManager._rename_into_place

    def crash_before_index(self, source, target):
        if target.endswith(".index"):
            raise KeyboardInterrupt("simulated crash")
        real_rename(self, source, target)

    monkeypatch.setattr(CheckpointManager, "_rename_into_place", crash_before_index)
    with pytest.raises(KeyboardInterrupt):
        manager.save(2, {"model": net, "optimizer": opt})
    monkeypatch.undo()
    assert os.path.exists(prefix + ".002.data-00000-of-00001")  # the data made it, the index did not
    assert latest_complete(prefix) == (1, prefix + ".001")

    CheckpointManager(prefix)  # next start: the orphaned pieces go
    assert sorted(os.listdir(tmp_path)) == [
        "model.001.data-00000-of-00001", "model.001.index", "model.001.meta.json"]


def test_killed_process_leaves_only_temporary_files(tmp_path):
    """A process that dies mid-write (no cleanup code runs) leaves nothing that looks complete."""
    prefix = str(tmp_path / "model")
    script = textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {REPO!r})
        import tensorflow as tf
        from netcompiler.engine.checkpoints import CheckpointManager
        class Killed(CheckpointManager):
            def _rename_into_place(self, source, target):
                if target.endswith(".data-00000-of-00001"):
                    os._exit(3)  # dies before anything is renamed
                super()._rename_into_place(source, target)
        m = tf.Module()
        m.v = tf.Variable([1.0, 2.0])
        Killed({prefix!r}).save(1, {{"model": m}})
    """)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, timeout=120)
    assert result.returncode == 3, result.stderr.decode()[-2000:]
    leftovers = os.listdir(tmp_path)
    assert leftovers and all(".tmp-" in name for name in leftovers)
    assert latest_complete(prefix) is None
    CheckpointManager(prefix)
    assert os.listdir(tmp_path) == []


def test_mismatching_network_names_the_file_and_variables(tmp_path):
    manager = CheckpointManager(str(tmp_path / "model"))
    net, opt = trained()
    path = manager.save(1, {"model": net, "optimizer": opt})

    other = Net(extra=True)
    before = values(other)
    with pytest.raises(CheckpointError) as info:
        manager.restore(path, {"model": other})
    message = str(info.value)
    assert path in message and "model/z" in message and "missing in the checkpoint" in message
    for a, b in zip(values(other), before):  # nothing was assigned
        np.testing.assert_array_equal(a, b)

    with pytest.raises(CheckpointError) as info:
        manager.restore(path, {"model": Net(rename=True)})
    message = str(info.value)
    assert "model/layers/out/c" in message and "model/layers/out/b" in message

    with pytest.raises(CheckpointError) as info:
        manager.restore(path, {"model": Net(n=4)})
    assert "model/w: checkpoint (2, 3), network (2, 4)" in str(info.value)

    # The optimizer's positional lists fit a renamed model; the model comparison still catches it.
    renamed, renamed_opt = trained(rename=True)
    with pytest.raises(CheckpointError, match="model/layers/out/c"):
        manager.restore(path, {"model": renamed, "optimizer": renamed_opt})


def test_truncated_data_file_names_the_file(tmp_path):
    prefix = str(tmp_path / "model")
    manager = CheckpointManager(prefix)
    net, opt = trained()
    path = manager.save(1, {"model": net, "optimizer": opt})
    data = path + ".data-00000-of-00001"
    with open(data, "r+b") as f:
        f.truncate(os.path.getsize(data) // 2)
    with pytest.raises(CheckpointError) as info:
        manager.restore(path, {"model": Net()})
    assert data in str(info.value)


def test_corrupted_data_bytes_name_the_file(tmp_path):
    m = tf.Module()
    m.v = tf.Variable(tf.zeros([64, 64]))
    manager = CheckpointManager(str(tmp_path / "model"))
    path = manager.save(1, {"model": m})
    data = path + ".data-00000-of-00001"
    with open(data, "r+b") as f:
        f.seek(5000)
        f.write(b"\x13\x37" * 8)
    fresh = tf.Module()
    fresh.v = tf.Variable(tf.ones([64, 64]))
    with pytest.raises(CheckpointError) as info:
        manager.restore(path, {"model": fresh})
    assert data in str(info.value)


def test_damaged_index_file_names_the_file(tmp_path):
    manager = CheckpointManager(str(tmp_path / "model"))
    path = manager.save(1, {"model": Net()})
    with open(path + ".index", "r+b") as f:
        f.seek(20)
        f.write(b"garbage-garbage")
    with pytest.raises(CheckpointError) as info:
        manager.restore(path, {"model": Net()})
    assert path + ".index" in str(info.value)
    with pytest.raises(CheckpointError, match="model.007"):
        manager.restore(str(tmp_path / "model.007"), {"model": Net()})


def test_unbuilt_optimizer_is_refused_before_restoring(tmp_path):
    manager = CheckpointManager(str(tmp_path / "model"))
    net, opt = trained()
    manager.save(1, {"model": net, "optimizer": opt})
    assert manager.latest_path() == str(tmp_path / "model.001")
    with pytest.raises(ValueError, match="optimizer.build"):
        manager.restore_latest({"model": Net(), "optimizer": tf.keras.optimizers.Adam()})
