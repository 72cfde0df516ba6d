"""The shipped configs (configs/*.py): each dumps cleanly as text, JSON and Graphviz, without TensorFlow,
with the templates and parameter counts its architecture implies."""

import glob
import json
import os
import re
import subprocess
import sys

import pytest

from netcompiler.cli import dump_net_main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG_DIR = os.path.join(ROOT, "configs")
ALL_CONFIGS = sorted(glob.glob(os.path.join(CONFIG_DIR, "*.py")))
ALL_IDS = [os.path.basename(path) for path in ALL_CONFIGS]


def _is_frontend_config(path):
    """A model as Python code (get_model), not a network dict: tests/test_frontend_configs.py covers its runs."""
    with open(path, encoding="utf-8") as f:
        return re.search(r"^def get_model\b", f.read(), re.M) is not None


CONFIGS = [path for path in ALL_CONFIGS if not _is_frontend_config(path)]
CONFIG_IDS = [os.path.basename(path) for path in CONFIGS]
FRONTEND_CONFIGS = {os.path.basename(path): path for path in ALL_CONFIGS if _is_frontend_config(path)}


def config_path(name):
    return os.path.join(CONFIG_DIR, name)


def dump(capsys, path, *flags):
    capsys.readouterr()
    status = dump_net_main([path, *flags])
    out, err = capsys.readouterr()
    assert status == 0, f"dump-net {os.path.basename(path)} {' '.join(flags)} failed:\n{err}"
    assert "Traceback" not in err
    return out, err


def normalised(line):
    return " ".join(line.split())


def test_there_are_shipped_configs():
    names = set(CONFIG_IDS)
    for expected in ("demo-12ax-lstm.py", "asr-conv-blstm.py", "transformer-enc.py", "custom-dims.py",
                     "returnn-12ax-native-lstm.py"):
        assert expected in names


@pytest.mark.parametrize("path", ALL_CONFIGS, ids=ALL_IDS)
def test_config_has_header_comment(path):
    with open(path, encoding="utf-8") as f:
        head = [f.readline() for _ in range(3)]
    comments = [line for line in head if line.startswith("#")]
    assert len(comments) >= 2, f"{os.path.basename(path)} needs a 2-3 line comment on top"
    assert any("dump-net" in line or "compile-net" in line for line in comments)


# --- text ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", CONFIGS, ids=CONFIG_IDS)
def test_text_dump(capsys, path):
    out, err = dump(capsys, path)
    lines = out.strip().splitlines()
    summary = re.fullmatch(r"(\d+) layers, (\d+) parameters", lines[-1])
    assert summary, lines[-1]
    layer_lines = [line for line in lines[:-1] if not line.startswith(" ")]
    assert len(layer_lines) == int(summary.group(1))
    names = [line.split()[0] for line in layer_lines]
    assert "output" in names
    assert len(set(names)) == len(names)
    for line in err.splitlines():
        assert line.startswith("notice: "), line


def test_demo_12ax_output_line(capsys):
    out, _ = dump(capsys, config_path("demo-12ax-lstm.py"))
    lines = [normalised(line) for line in out.splitlines() if line.split()[:1] == ["output"]]
    # the softmax keeps the order of the rec layer it reads: time-major, as in RETURNN
    assert lines == ["output softmax [T|'time:data', B, F|'output:feature'(2)] float32 loss ce on data:classes"]


def test_returnn_style_12ax_notices(capsys):
    out, err = dump(capsys, config_path("returnn-12ax-native-lstm.py"))
    for key in ("use_tensorflow", "device", "log_verbosity"):
        assert f"notice: config key '{key}'" in err
    lines = [normalised(line) for line in out.splitlines() if line.split()[:1] == ["output"]]
    # the softmax keeps the order of the rec layer it reads: time-major, as in RETURNN
    assert lines == ["output softmax [T|'time:data', B, F|'output:feature'(2)] float32 loss ce on data:classes"]


# Parameter counts, worked out by hand from each architecture.
#   rec LSTM, in -> n: W [in, 4n] + W_re [n, 4n] + b [4n] = 4n (in + n + 1)
#   linear in -> n: in*n + n;   conv (kh, kw), c_in -> c_out: kh*kw*c_in*c_out (+ c_out with a bias: with_bias,
#   or behavior_version >= 10);   layer_norm F: 2F
EXPECTED_PARAMS = {
    # lstm 9 -> 10: 40 * (9 + 10 + 1) = 800; softmax 10 -> 2: 22
    "demo-12ax-lstm.py": 800 + 22,
    # nativelstm2 9 -> 10: 800; standardlstm 10 -> 10: 40 * 21 = 840; softmax 10 -> 2: 22
    "returnn-12ax-native-lstm.py": 800 + 840 + 22,
    # conv0 3x3 1->32: 288; conv1 3x3 32->64: 18432 (no behavior_version: no bias);
    # freq 40 -pool2-> 20 -pool2-> 10, so 10*64 = 640 in;
    # lstm0 fw/bw 640 -> 512: 2048 * 1153 each; lstm1, lstm2 fw/bw 1024 -> 512: 2048 * 1537 each (4 of them);
    # softmax 1024 -> 1000: 1024000 + 1000
    "asr-conv-blstm.py": 288 + 18432 + 2 * 2048 * (640 + 512 + 1) + 4 * 2048 * (1024 + 512 + 1)
    + (1024 * 1000 + 1000),
    # input 80 -> 256: 20480 + 256; per block: 2 layer_norms 2*512, q/k/v 3 * 256*256 (no bias),
    # att_out 256*256 + 256, ff1 256*1024 + 1024, ff2 1024*256 + 256; final layer_norm 512; softmax 256*500 + 500
    "transformer-enc.py": (80 * 256 + 256)
    + 2 * (2 * 512 + 3 * 256 * 256 + (256 * 256 + 256) + (256 * 1024 + 1024) + (1024 * 256 + 256))
    + 512 + (256 * 500 + 500),
    # norm over time, params per mel band 2*80; linear 5*80=400 -> 256: 102400 + 256;
    # lstm 256 -> 256: 1024 * 513; softmax 256 -> 500: 128000 + 500
    # loop bodies: linear (9 + 20) -> 20 with bias; softmax 20 -> 2
    "12ax-loop-rnn.py": (29 * 20 + 20) + (20 * 2 + 2),
    # four gates (9 + 10) -> 10 with bias; softmax 10 -> 2
    "12ax-loop-lstm.py": 4 * (19 * 10 + 10) + (10 * 2 + 2),
    # embedding 10*32; two LSTMs 32 -> 64: 4*64*(32 + 64 + 1) each; keys 128*64; decoder: target embedding 10*32,
    # state [32 + 128 + 64] -> 64 with bias, query 64*64, energy 64*1, readout [64 + 128 + 32] -> 64 with bias,
    # softmax 64 -> 10 with bias
    "attention-copy.py": 10 * 32 + 2 * 4 * 64 * (32 + 64 + 1) + 128 * 64
    + 10 * 32 + (224 * 64 + 64) + 64 * 64 + 64 + (224 * 64 + 64) + (64 * 10 + 10),
    "custom-dims.py": 2 * 80 + (400 * 256 + 256) + 1024 * (256 + 256 + 1) + (256 * 500 + 500),
    # the final network (dump-net's default): lstm1 fw/bw 9 -> 10: 40 * 20 each; lstm2, lstm3 fw/bw 20 -> 10:
    # 40 * 31 each (4 of them); softmax 20 -> 2: 42
    "demo-12ax-pretrain.py": 2 * 40 * 20 + 4 * 40 * 31 + 42,
}


def test_every_config_has_a_pinned_parameter_count():
    assert sorted(EXPECTED_PARAMS) == CONFIG_IDS


@pytest.mark.parametrize("name", sorted(EXPECTED_PARAMS))
def test_parameter_count(capsys, name):
    out, _ = dump(capsys, config_path(name))
    assert out.strip().splitlines()[-1].endswith(f" {EXPECTED_PARAMS[name]} parameters")
    data = json.loads(dump(capsys, config_path(name), "--json")[0])
    assert data["num_params"] == EXPECTED_PARAMS[name]


# --- JSON ------------------------------------------------------------------------------------------------
LAYER_KEYS = {"name", "class", "dims", "dtype", "sparse", "dim", "shape", "batch_shape", "batch_dim_axis",
              "time_dim_axis", "feature_dim_axis", "params"}
DIM_KEYS = {"kind", "size", "dynamic", "description"}


@pytest.mark.parametrize("path", CONFIGS, ids=CONFIG_IDS)
def test_json_dump(capsys, path):
    out, _ = dump(capsys, path, "--json")
    data = json.loads(out)
    assert isinstance(data["layers"], list) and data["layers"]
    names = [record["name"] for record in data["layers"]]
    assert "output" in names and len(set(names)) == len(names)
    total = 0
    for record in data["layers"]:
        missing = LAYER_KEYS - set(record)
        assert not missing, f"layer {record.get('name')}: keys {missing} missing"
        dims = record["dims"]
        for dim in dims:
            assert set(dim) >= DIM_KEYS
            assert dim["kind"] in ("batch", "spatial", "feature")
            assert dim["dynamic"] == (dim["size"] is None)
            assert isinstance(dim["description"], str) and dim["description"]
        assert record["batch_shape"] == [dim["size"] for dim in dims]
        assert record["shape"] == [dim["size"] for dim in dims if dim["kind"] != "batch"]
        batch_axes = [i for i, dim in enumerate(dims) if dim["kind"] == "batch"]
        assert record["batch_dim_axis"] == (batch_axes[0] if batch_axes else None)
        for role in ("time_dim_axis", "feature_dim_axis"):
            assert record[role] is None or 0 <= record[role] < len(dims)
        if record["sparse"]:
            assert record["feature_dim_axis"] is None
            assert record["dtype"].startswith(("int", "uint"))
        elif record["feature_dim_axis"] is not None:
            assert record["dim"] == dims[record["feature_dim_axis"]]["size"]
        for shape in record["params"].values():
            assert all(isinstance(s, int) and s > 0 for s in shape)
            n = 1
            for s in shape:
                n *= s
            total += n
    assert data["num_params"] == total
    for source in (r for r in data["layers"] for r in r.get("from", [])):
        assert source in names


def test_json_output_of_demo(capsys):
    data = json.loads(dump(capsys, config_path("demo-12ax-lstm.py"), "--json")[0])
    output = next(r for r in data["layers"] if r["name"] == "output")
    assert output["class"] == "softmax"
    assert output["dims"] == [  # time-major: the order of the rec layer it reads, as in RETURNN
        {"kind": "spatial", "size": None, "dynamic": True, "description": "time:data"},
        {"kind": "batch", "size": None, "dynamic": True, "description": "batch"},
        {"kind": "feature", "size": 2, "dynamic": False, "description": "output:feature"},
    ]
    assert (output["dtype"], output["sparse"], output["dim"]) == ("float32", False, 2)
    assert output["shape"] == [None, 2] and output["batch_shape"] == [None, None, 2]
    assert (output["batch_dim_axis"], output["time_dim_axis"], output["feature_dim_axis"]) == (1, 0, 2)
    assert output["params"] == {"W": [10, 2], "b": [2]}


def test_custom_dims_are_shared(capsys):
    data = json.loads(dump(capsys, config_path("custom-dims.py"), "--json")[0])
    by_name = {r["name"]: r for r in data["layers"]}
    time_descriptions = {r["dims"][r["time_dim_axis"]]["description"] for r in data["layers"]}
    assert time_descriptions == {"time"}  # features, labels and every layer share the declared time Dim
    assert by_name["data:classes"]["sparse_dim"] == "vocab"
    assert by_name["output"]["dims"][-1]["description"] == "vocab"
    assert by_name["hidden"]["dims"][-1] == {"kind": "feature", "size": 256, "dynamic": False,
                                             "description": "hidden"}
    assert by_name["context_flat"]["shape"] == [None, 400]


def test_transformer_keys_have_their_own_time_dim(capsys):
    data = json.loads(dump(capsys, config_path("transformer-enc.py"), "--json")[0])
    by_name = {r["name"]: r for r in data["layers"]}
    for block in (1, 2):
        energy = by_name[f"block{block}_energy"]
        descriptions = [d["description"] for d in energy["dims"]]
        assert "time:data" in descriptions and "key-time" in descriptions
        assert energy["shape"] == [4, None, None]
        assert by_name[f"block{block}_context_merged"]["shape"] == [None, 256]
        assert by_name[f"block{block}"]["shape"] == [None, 256]


def test_asr_front_end_shapes(capsys):
    data = json.loads(dump(capsys, config_path("asr-conv-blstm.py"), "--json")[0])
    by_name = {r["name"]: r for r in data["layers"]}
    assert by_name["source_split"]["shape"] == [None, 40, 1]
    assert by_name["pool0"]["shape"] == [None, 20, 32]
    assert by_name["pool1"]["shape"] == [None, 10, 64]
    assert by_name["conv_merged"]["shape"] == [None, 640]
    assert by_name["encoder"]["shape"] == [None, 1024]
    # no subsampling in time: the output keeps the input's time Dim (framewise targets)
    output = by_name["output"]
    assert output["dims"][output["time_dim_axis"]]["description"] == "time:data"
    assert output["loss"] == "ce"


# --- Graphviz ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", CONFIGS, ids=CONFIG_IDS)
def test_dot_dump(capsys, path):
    out, _ = dump(capsys, path, "--dot")
    text_out, _ = dump(capsys, path)
    layer_names = [line.split()[0] for line in text_out.strip().splitlines()[:-1] if not line.startswith(" ")]
    lines = out.strip().splitlines()
    assert lines[0].startswith("digraph ") and lines[0].endswith("{")
    assert lines[-1] == "}"
    nodes = re.findall(r'^\s*("(?:[^"\\]|\\.)*")\s*\[label=', out, re.M)
    edges = re.findall(r'^\s*("(?:[^"\\]|\\.)*")\s*->\s*("(?:[^"\\]|\\.)*")\s*\[label="(.*)"\];$', out, re.M)
    assert sorted(n.strip('"') for n in nodes) == sorted(layer_names)
    assert len(set(nodes)) == len(nodes)
    assert edges, "no edges"
    node_set = set(nodes)
    for source, target, label in edges:
        assert source in node_set and target in node_set
        assert re.match(r"\[B?.*\]", label), label
    assert any(label.startswith("[B, T|") for _, _, label in edges)
    for line in lines[1:-1]:
        assert line.rstrip().endswith(";"), line


# --- no TensorFlow ---------------------------------------------------------------------------------------
def test_template_inference_does_not_import_tensorflow():
    code = (
        "import sys\n"
        "import netcompiler, layers\n"
        "from netcompiler.config import load_config\n"
        "from netcompiler.network import build_network\n"
        "from netcompiler.dump import format_dot, format_json, format_text\n"
        f"paths = {CONFIGS!r}\n"
        "assert len(paths) >= 5, paths\n"
        "for path in paths:\n"
        "    network = build_network(load_config(path))\n"
        "    for layer in network.all_layers():\n"
        "        layer.output.describe(); layer.output.to_json(); dict(layer.params)\n"
        "    format_text(network); format_json(network); format_dot(network)\n"
        "assert 'tensorflow' not in sys.modules, 'template inference imported TensorFlow'\n"
        "print('ok', len(paths))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ok ")


# --- models as Python code (get_model) ---------------------------------------------------------------------
FRONTEND_PARAMS = {
    # Linear 9 -> 50 -> 100 -> 2, each with a bias
    "demo-12ax-rf.py": (9 * 50 + 50) + (50 * 100 + 100) + (100 * 2 + 2),
    # Conv1d 9 -> 50 -> 100 -> 2, kernel 5, each with a bias
    "demo-12ax-torch.py": (9 * 50 * 5 + 50) + (50 * 100 * 5 + 100) + (100 * 2 * 5 + 2),
    # input Linear 9 -> 32; 2 blocks of (2 LayerNorms 32, qkv 32 -> 96, proj 32 -> 32, ff 32 -> 64 -> 32);
    # final LayerNorm; output Linear 32 -> 2 (every Linear with a bias)
    "transformer-enc-rf.py": (9 * 32 + 32) + 2 * (2 * 2 * 32 + (32 * 96 + 96) + (32 * 32 + 32) + (32 * 64 + 64)
                                                  + (64 * 32 + 32)) + 2 * 32 + (32 * 2 + 2),
}


def test_every_frontend_config_has_a_pinned_parameter_count():
    assert sorted(FRONTEND_PARAMS) == sorted(FRONTEND_CONFIGS)


@pytest.mark.parametrize("name", sorted(FRONTEND_PARAMS))
def test_frontend_config_text_dump(capsys, name):
    """The model's parameters and count; what its own code prints goes to stderr, not into the dump."""
    pytest.importorskip("torch", reason="the demos' backend is torch (an optional extra)")
    out, err = dump(capsys, FRONTEND_CONFIGS[name])
    lines = out.strip().splitlines()
    assert lines[0].startswith("model ")
    assert f" {FRONTEND_PARAMS[name]} parameters" in out
    assert "Hello, experiment" not in out
    assert "Hello, experiment" in err or not name.startswith("demo-")  # only the RETURNN demos greet


def test_frontend_config_json_and_dot_show_the_layer_dict(capsys):
    pytest.importorskip("torch", reason="the demos' backend is torch (an optional extra)")
    path = FRONTEND_CONFIGS["demo-12ax-rf.py"]
    data = json.loads(dump(capsys, path, "--json")[0])
    assert data["num_params"] == FRONTEND_PARAMS["demo-12ax-rf.py"]
    assert {"relu", "ce"} <= {record["name"] for record in data["layers"]}
    out, _ = dump(capsys, path, "--dot")
    assert out.startswith("digraph ") and out.rstrip().endswith("}")


def test_plain_torch_model_has_no_layer_dict_to_show(capsys):
    pytest.importorskip("torch", reason="the demo's model is a PyTorch module (an optional extra)")
    capsys.readouterr()
    assert dump_net_main([FRONTEND_CONFIGS["demo-12ax-torch.py"], "--json"]) == 2
    err = capsys.readouterr().err
    assert "plain PyTorch module" in err and "without --json/--dot" in err and "Traceback" not in err
