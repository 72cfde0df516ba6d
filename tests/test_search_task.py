"""`--task search` as a user runs it: the shipped attention config trains and decodes to a low error
(slow), and on a tiny model the search output file comes out in RETURNN's formats, in corpus order, with the
error recorded; an existing output file is never overwritten."""

import ast
import io
import json
import os
from pathlib import Path

import pytest

from netcompiler.engine.main import run_task
from netcompiler.engine.searching import edit_distance
from netcompiler.errors import ConfigError

REPO = Path(__file__).resolve().parent.parent
ATTENTION = str(REPO / "configs" / "attention-copy.py")


def settings(**values):
    """`++key value` overrides."""
    return [item for key, value in values.items() for item in (f"++{key}", str(value))]


def tiny(tmp_path, epochs=1, seqs=20):
    return settings(model=f"{tmp_path}/model", num_epochs=epochs,
                    train={"class": "CopyTaskDataset", "nsymbols": 10, "minlen": 2, "maxlen": 5, "num_seqs": seqs},
                    dev={"class": "CopyTaskDataset", "nsymbols": 10, "minlen": 2, "maxlen": 5, "num_seqs": 7,
                         "fixed_random_seed": 3})


def run(args, task=None):
    log = io.StringIO()
    assert run_task(ATTENTION, args, task=task, log=log) == 0
    return log.getvalue()


@pytest.mark.parametrize("file_format", ["txt", "py"])
def test_search_writes_one_hypothesis_per_sequence_in_corpus_order(tmp_path, file_format):
    run(tiny(tmp_path))
    out = tmp_path / f"hyps.{file_format}"
    log = run(tiny(tmp_path) + settings(search_output_file=out, search_output_file_format=file_format), task="search")
    assert "7 sequences" in log and f"written to {out}" in log
    text = out.read_text()
    if file_format == "txt":
        lines = text.splitlines()
        assert len(lines) == 7 and all(all(tok.isdigit() for tok in line.split()) for line in lines)
    else:
        hyps = ast.literal_eval(text)
        assert list(hyps) == [f"seq-{i}" for i in range(7)]
        assert all(isinstance(h, str) for h in hyps.values())
    record = json.loads((tmp_path / "model.search_scores").read_text().splitlines()[-1])
    assert record["dataset"] == "dev" and record["seqs"] == 7 and 0 <= record["error"] <= 2


def test_search_never_overwrites_an_output_file(tmp_path):
    run(tiny(tmp_path))
    out = tmp_path / "hyps.txt"
    out.write_text("precious\n")
    with pytest.raises(ConfigError, match="exists already"):
        run(tiny(tmp_path) + settings(search_output_file=out), task="search")
    assert out.read_text() == "precious\n"


def test_search_of_the_rec_layer_writes_the_whole_beam_with_scores(tmp_path):
    run(tiny(tmp_path))
    out = tmp_path / "beam.py"
    run(tiny(tmp_path) + settings(search_output_layer="output", search_output_file=out,
                                  search_output_file_format="py"), task="search")
    hyps = ast.literal_eval(out.read_text())
    for beam in hyps.values():
        assert len(beam) == 4  # the config's beam_size
        scores = [score for score, _ in beam]
        assert scores == sorted(scores, reverse=True) and all(s <= 0 for s in scores)


def test_an_unknown_search_output_layer_is_named(tmp_path):
    run(tiny(tmp_path))
    with pytest.raises(ConfigError, match="no layer 'decison'.*did you mean 'decision'"):
        run(tiny(tmp_path) + settings(search_output_layer="decison"), task="search")


def test_edit_distance():
    assert edit_distance([1, 2, 3], [1, 2, 3]) == 0
    assert edit_distance([1, 3], [1, 2, 3]) == 1
    assert edit_distance([], [4, 5]) == 2
    assert edit_distance([1, 2], [2, 1]) == 2


@pytest.mark.slow
def test_the_attention_config_learns_to_copy_and_search_decodes_it(tmp_path):
    log = run(settings(model=f"{tmp_path}/model"))
    dev_fer = [float(line.split("dev ce")[1].split()[2]) for line in log.splitlines() if line.startswith("epoch")]
    assert dev_fer[-1] < 0.05
    out = tmp_path / "hyps.txt"
    log = run(settings(model=f"{tmp_path}/model", search_output_file=out), task="search")
    error = json.loads((tmp_path / "model.search_scores").read_text())["error"]
    assert error < 0.08, log
    assert len(out.read_text().splitlines()) == 200


ENC_DEC = '''
train = {"class": "TaskNumberBaseConvertDataset", "num_seqs": 30, "max_input_seq_len": 4}
dev = {"class": "TaskNumberBaseConvertDataset", "num_seqs": 6, "max_input_seq_len": 4, "fixed_random_seed": 3}
extern_data = {"data": {"sparse": True, "dim": 8}, "classes": {"sparse": True, "dim": 2}}
network = {
    "embed": {"class": "linear", "activation": None, "from": "data", "n_out": 8},
    "enc": {"class": "rec", "unit": "lstm", "from": "embed", "n_out": 8},
    "enc_last": {"class": "get_last_hidden_state", "from": "enc", "n_out": 16},
    "output": {"class": "rec", "from": [], "target": "classes0", "max_seq_len": 20, "unit": {
        "output_embed": {"class": "linear", "activation": None, "from": "output", "n_out": 8},
        "s": {"class": "rec", "unit": "lstm", "from": ["prev:output_embed", "base:enc_last"], "n_out": 8},
        "prob": {"class": "softmax", "from": "s", "target": "classes0", "loss": "ce"},
        "output": {"class": "choice", "from": "prob", "target": "classes0", "beam_size": 3},
        "end": {"class": "compare", "from": "output", "value": 2}}},
    "target_with_eos_": {"class": "reinterpret_data", "from": "data:classes", "increase_sparse_dim": 1},
    "target_with_eos": {"class": "postfix_in_time", "postfix": 2, "from": "target_with_eos_",
                        "register_as_extern_data": "classes0"},
}
num_epochs = 1
'''


def test_search_do_eval_compares_with_a_target_registered_by_a_layer(tmp_path):
    """RETURNN's enc-dec demo: the targets (classes0) are a layer's output, not data."""
    config = tmp_path / "enc_dec.py"
    config.write_text(ENC_DEC)
    args = settings(model=f"{tmp_path}/model")
    assert run_task(str(config), args, log=io.StringIO()) == 0
    log = io.StringIO()
    assert run_task(str(config), args, task="search", log=log) == 0
    record = json.loads((tmp_path / "model.search_scores").read_text())
    assert record["seqs"] == 6 and record["ref_labels"] > 6  # each reference ends with the postfix label
    assert "labels of 'classes0'" in log.getvalue()
