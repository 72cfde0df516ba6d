"""compile-net with a MetaDataset as train/dev: it trains exactly as on one HDF file holding the same matched data;
extern_data keys that its data_map does not define, or dims its data do not have, are errors naming them."""

import io

import numpy as np
import pytest

from netcompiler.engine.datasets.hdf_writer import write_hdf
from netcompiler.engine.main import run_task
from netcompiler.errors import ConfigError

from run_helpers import run
from test_eval_datasets import recorded_scores

NUM = 12
ORDER = [7, 2, 10, 0, 5, 11, 3, 8, 1, 6, 9, 4]  # align.hdf stores the sequences in this order

CONFIG = """
train = %(train)s
dev = %(dev)s
extern_data = {"data": {"dim": 3}, "classes": {"dim": 4, "sparse": True}}
batch_size = 60
max_seqs = 4
network = {"hidden": {"class": "linear", "activation": "tanh", "n_out": 8, "from": "data"},
           "output": {"class": "softmax", "loss": "ce", "from": "hidden", "target": "classes"}}
optimizer = {"class": "adam"}
learning_rate = 0.01
num_epochs = 2
random_seed = 1
model = %(model)r
"""


@pytest.fixture()
def files(tmp_path):
    rng = np.random.RandomState(11)
    lengths = rng.randint(3, 12, size=NUM)
    feats = [rng.standard_normal((n, 3)).astype(np.float32) for n in lengths]
    classes = [rng.randint(0, 4, size=n).astype(np.int32) for n in lengths]
    tags = [f"utt-{i}" for i in range(NUM)]
    write_hdf(str(tmp_path / "feat.hdf"), [{"data": f} for f in feats], tags=tags)
    write_hdf(str(tmp_path / "align.hdf"), [{"classes": classes[i]} for i in ORDER], tags=[tags[i] for i in ORDER],
              dims={"classes": 4})
    write_hdf(str(tmp_path / "joined.hdf"), [{"data": f, "classes": c} for f, c in zip(feats, classes)], tags=tags,
              dims={"classes": 4})
    return tmp_path


def meta(path, **opts):
    return repr(dict({"class": "MetaDataset",
                      "datasets": {"feat": {"class": "HDFDataset", "files": [str(path / "feat.hdf")]},
                                   "align": {"class": "HDFDataset", "files": [str(path / "align.hdf")]}},
                      "data_map": {"data": ("feat", "data"), "classes": ("align", "classes")}}, **opts))


def joined(path, **opts):
    return repr(dict({"class": "HDFDataset", "files": [str(path / "joined.hdf")]}, **opts))


def write_config(path, name, train, dev, extra=""):
    model = str(path / name / "model")
    config = path / f"{name}.py"
    config.write_text(CONFIG % {"train": train, "dev": dev, "model": model} + extra)
    return str(config), model


@pytest.mark.slow
def test_training_on_a_meta_dataset_equals_training_on_the_joined_file(files):
    meta_config, meta_model = write_config(files, "meta", meta(files, seq_ordering="random", partition_epoch=2),
                                           meta(files))
    joined_config, joined_model = write_config(files, "joined", joined(files, seq_ordering="random",
                                                                        partition_epoch=2), joined(files))
    run(meta_config)
    run(joined_config)
    ours, reference = recorded_scores(meta_model), recorded_scores(joined_model)
    assert sorted(ours) == [1, 2] and ours[1]  # two epochs with scores
    for epoch in ours:
        assert set(ours[epoch]) == set(reference[epoch])
        for key, value in ours[epoch].items():
            assert value == pytest.approx(reference[epoch][key], rel=1e-5), (epoch, key)


def test_extern_data_keys_the_data_map_lacks_are_an_error(files):
    extra = 'extern_data = {"data": {"dim": 3}, "labels": {"dim": 4, "sparse": True}}\n' \
            'network["output"]["target"] = "labels"\n'
    config, model = write_config(files, "wrong", meta(files), meta(files), extra)
    with pytest.raises(ConfigError, match=r"dataset 'train'.*reads labels, which the dataset does not provide "
                                          r"\(it has: classes, data\)"):
        run_task(config, [], log=io.StringIO())


def test_an_extern_data_dim_the_data_do_not_have_is_an_error(files):
    extra = 'extern_data["data"] = {"dim": 5}\n'
    config, model = write_config(files, "dim", meta(files), meta(files), extra)
    with pytest.raises(ConfigError, match=r"dataset 'train': data key 'data' has frames of shape \(3,\) in the "
                                          r"dataset, but the network expects \(5,\).*extern_data\['data'\]"):
        run_task(config, [], log=io.StringIO())
