"""`compile-net --task export`: a TensorFlow SavedModel of the trained network that plain TensorFlow loads (in a
process where netcompiler cannot be imported) and that computes what netcompiler computes."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from netcompiler import load_network
from netcompiler.engine.checkpoint_interchange import load_params
from netcompiler.errors import CheckpointError, ConfigError
from tests.run_helpers import run, task_12ax_config

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CONFIG = """
""" + task_12ax_config(20, batch_size=5000) + """
network = {
    "lstm": {"class": "rec", "unit": "lstm", "n_out": 5, "from": "data"},
    "output": {"class": "softmax", "loss": "ce", "from": "lstm", "target": "classes"},
}
optimizer = {"class": "adam"}
learning_rate = 0.05
num_epochs = 1
model = %r
"""

# Runs with `python -I` (no user site, no PYTHONPATH, no current folder), the repository removed from sys.path and
# the editable install's import hook removed: only an installed TensorFlow (the script checks netcompiler is gone).
# A folder beside the repository whose name starts like it (a virtualenv "<repo>venv") stays on the path.
# Reads the batch from argv[2], prints the signature's outputs as JSON.
LOADER = textwrap.dedent("""
    import json, os, sys
    repo = os.path.realpath(sys.argv[3])
    inside = lambda p: os.path.realpath(p) == repo or os.path.realpath(p).startswith(repo + os.sep)
    sys.path[:] = [p for p in sys.path if p and not inside(p)]
    sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in getattr(f, "__module__", "")]
    sys.path_hooks[:] = [h for h in sys.path_hooks if "__editable__" not in getattr(h, "__module__", "")]
    sys.path_importer_cache.clear()
    try:
        import netcompiler  # noqa: F401
    except ImportError:
        pass
    else:
        raise SystemExit("netcompiler is importable: " + netcompiler.__file__)
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    import numpy as np
    import tensorflow as tf
    loaded = tf.saved_model.load(sys.argv[1])
    serve = loaded.signatures["serving_default"]
    batch = np.load(sys.argv[2])
    out = serve(data=tf.constant(batch["data"]), data_lengths=tf.constant(batch["data_lengths"]))
    print(json.dumps({"inputs": sorted(serve.structured_input_signature[1]),
                      "outputs": {k: v.numpy().tolist() for k, v in out.items()}}))
""")


def _write_config(tmp_path, **extra):
    path = tmp_path / "config.py"
    text = CONFIG % str(tmp_path / "out" / "model")
    path.write_text(text + "".join(f"{key} = {value!r}\n" for key, value in extra.items()))
    return str(path)


def _ragged_batch(tmp_path):
    rng = np.random.RandomState(3)
    lengths = np.array([7, 3, 5], np.int32)
    data = rng.randn(3, 7, 9).astype(np.float32)
    for row, length in enumerate(lengths):
        data[row, length:] = 1e4  # garbage in the padding: must not reach the valid frames
    path = tmp_path / "batch.npz"
    np.savez(path, data=data, data_lengths=lengths)
    return data, lengths, str(path)


def _load_in_plain_tensorflow(export, batch_file):
    script = export + ".load.py"
    with open(script, "w") as f:
        f.write(LOADER)
    result = subprocess.run([sys.executable, "-I", script, export, batch_file, REPO], capture_output=True,
                            text=True, cwd=os.path.dirname(export), timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_the_saved_model_computes_the_trained_network_in_plain_tensorflow(tmp_path):
    config = _write_config(tmp_path)
    run(config)
    log = run(config, task="export")
    export = str(tmp_path / "out" / "model.export")
    assert f"to {export}" in log and "model.001" in log
    assert not [name for name in os.listdir(tmp_path / "out") if ".tmp-" in name]  # the temporary folder is gone
    data, lengths, batch_file = _ragged_batch(tmp_path)

    served = _load_in_plain_tensorflow(export, batch_file)

    assert served["inputs"] == ["data", "data_lengths"]  # the loss target 'classes' is no input
    assert served["outputs"]["output_lengths"] == lengths.tolist()
    network = load_network(config)
    model = network.model("tensorflow")
    load_params(str(tmp_path / "out" / "model.001"), model.params, model.backend)
    output = network.forward({"data": data}, {"data": lengths})["output"]
    expected = np.moveaxis(output.value, output.template.batch_dim_axis, 0)  # the rec layer's output is time-major
    values = np.asarray(served["outputs"]["output"], np.float32)
    assert values.shape == (3, 7, 2)
    for row, length in enumerate(lengths):
        np.testing.assert_allclose(values[row, :length], expected[row, :length], atol=1e-5)
    untrained = load_network(config).forward({"data": data}, {"data": lengths})["output"]
    untrained = np.moveaxis(untrained.value, untrained.template.batch_dim_axis, 0)
    assert np.abs(untrained[0, :7] - values[0, :7]).max() > 1e-3  # the trained parameters, not the initial ones


def test_export_without_a_checkpoint_is_refused(tmp_path):
    config = _write_config(tmp_path)
    with pytest.raises(CheckpointError, match="no checkpoint to load"):
        run(config, task="export")
    assert not os.path.exists(tmp_path / "out" / "model.export")


def test_export_never_overwrites_a_non_empty_folder(tmp_path):
    target = tmp_path / "exported"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    config = _write_config(tmp_path, export_path=str(target), allow_random_model_init=True)
    with pytest.raises(ConfigError, match="exists and is not empty") as info:
        run(config, task="export")
    assert "export_path" in str(info.value)
    assert os.listdir(target) == ["keep.txt"]


def test_export_of_a_get_model_config_is_refused(tmp_path):
    config = tmp_path / "frontend.py"
    config.write_text(open(os.path.join(REPO, "configs", "demo-12ax-rf.py")).read()
                      + f"\nmodel = {str(tmp_path / 'out' / 'model')!r}\n")
    with pytest.raises(ConfigError, match="get_model") as info:
        run(str(config), task="export")
    assert "--task forward" in str(info.value)


def test_export_on_the_torch_backend_is_refused(tmp_path):
    config = _write_config(tmp_path, backend="torch")
    with pytest.raises(ConfigError, match="backend 'torch' cannot export") as info:
        run(config, task="export")
    assert "backend = 'tensorflow'" in str(info.value)


def _export_untrained(tmp_path, network):
    """Exports `network` with its initial parameters (allow_random_model_init) and loads it in this process."""
    import tensorflow as tf

    config = _write_config(tmp_path, allow_random_model_init=True)
    with open(config, "a") as f:
        f.write(f"network = {network!r}\n")
    run(config, task="export")
    return config, tf.saved_model.load(str(tmp_path / "out" / "model.export")).signatures["serving_default"]


def test_an_output_without_a_time_axis_has_no_lengths_output(tmp_path):
    network = {"pooled": {"class": "reduce", "mode": "max", "axis": "T", "from": "data"},
               "output": {"class": "linear", "activation": "tanh", "n_out": 3, "from": "pooled"}}
    config, serve = _export_untrained(tmp_path, network)
    data, lengths, _ = _ragged_batch(tmp_path)
    served = serve(data=data, data_lengths=lengths)
    assert sorted(served) == ["output"]
    params = load_network(config).params
    pooled = np.stack([data[row, :length].max(axis=0) for row, length in enumerate(lengths)])  # valid frames only
    expected = np.tanh(pooled @ params["output/W"] + params["output/b"])
    assert served["output"].shape == (3, 3)
    np.testing.assert_allclose(served["output"].numpy(), expected, atol=1e-5)


def test_a_failed_save_leaves_neither_the_folder_nor_its_temporary_copy(tmp_path, monkeypatch):
    import tensorflow as tf

    def failing_save(module, path, signatures=None):
        os.makedirs(os.path.join(path, "variables"))
        raise OSError("disk trouble")

    monkeypatch.setattr(tf.saved_model, "save", failing_save)
    with pytest.raises(OSError, match="disk trouble"):
        _export_untrained(tmp_path, {"output": {"class": "copy", "from": "data"}})
    assert sorted(os.listdir(tmp_path / "out")) == []
