"""MetaDataset and CombinedDataset: data matched by tag / mixed from several datasets, compared with the
sub-datasets read on their own; their option errors. (Against RETURNN: test_meta_datasets_returnn.py; partition_epoch
of every dataset class: test_partition_epoch.py.)"""

import pickle

import numpy as np
import pytest

from netcompiler.engine.datasets import CombinedDataset, MetaDataset, make_dataset
from netcompiler.engine.datasets.hdf_writer import write_hdf
from netcompiler.errors import ConfigError, DataContentError, DataFileError, InvalidOptionError, UnknownOptionError

NUM = 6
ORDER_B = [4, 0, 5, 2, 1, 3]  # b.hdf stores the same sequences in this order


@pytest.fixture()
def corpus(tmp_path):
    """a.hdf: "data" (dim 3) of utt-0..5; b.hdf: "data" (dim 2) and "classes" of the same tags, other order."""
    rng = np.random.RandomState(3)
    lengths = rng.randint(2, 9, size=NUM)
    feats = [rng.standard_normal((n, 3)).astype(np.float32) for n in lengths]
    other = [rng.standard_normal((n, 2)).astype(np.float32) for n in lengths]
    classes = [rng.randint(0, 4, size=n).astype(np.int32) for n in lengths]
    tags = [f"utt-{i}" for i in range(NUM)]
    write_hdf(str(tmp_path / "a.hdf"), [{"data": f} for f in feats], tags=tags)
    write_hdf(str(tmp_path / "b.hdf"), [{"data": other[i], "classes": classes[i]} for i in ORDER_B],
              tags=[tags[i] for i in ORDER_B], dims={"classes": 4})
    return {"dir": tmp_path, "feats": feats, "other": other, "classes": classes, "tags": tags}


def hdf(corpus, name, **opts):
    return dict({"class": "HDFDataset", "files": [str(corpus["dir"] / name)]}, **opts)


def meta(corpus, **opts):
    return dict({"class": "MetaDataset", "datasets": {"a": hdf(corpus, "a.hdf"), "b": hdf(corpus, "b.hdf")},
                 "data_map": {"data": ("a", "data"), "classes": ("b", "classes")}}, **opts)


def epoch_seqs(dataset, epoch):
    dataset.init_epoch(epoch)
    return [(dataset.seq_tag(i), dataset.get_seq(i)) for i in range(dataset.num_seqs())]


# --- MetaDataset -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("ordering", ["default", "sorted", "random", "laplace:2"])
def test_meta_takes_features_from_one_file_and_classes_from_the_other_matched_by_tag(corpus, ordering):
    dataset = make_dataset(meta(corpus, seq_ordering=ordering), "train")
    seqs = epoch_seqs(dataset, 1)
    assert sorted(tag for tag, _ in seqs) == corpus["tags"]
    for tag, arrays in seqs:
        i = corpus["tags"].index(tag)
        assert list(arrays) == ["classes", "data"]  # RETURNN's key order: sorted
        np.testing.assert_array_equal(arrays["data"], corpus["feats"][i])
        np.testing.assert_array_equal(arrays["classes"], corpus["classes"][i])
    assert dataset.data_spec()["data"].dim == 3 and dataset.data_spec()["classes"].dim == 4
    if ordering == "sorted":
        assert [len(a["data"]) for _, a in seqs] == sorted(len(f) for f in corpus["feats"])


def test_meta_corpus_order_is_the_default_sub_datasets(corpus):
    # without seq_order_control_dataset the dataset of "data" gives the corpus; with it, that one
    by_a = make_dataset(meta(corpus), "train")
    assert [t for t, _ in epoch_seqs(by_a, 1)] == corpus["tags"]
    by_b = make_dataset(meta(corpus, seq_order_control_dataset="b"), "train")
    assert [t for t, _ in epoch_seqs(by_b, 1)] == [corpus["tags"][i] for i in ORDER_B]


def test_meta_control_dataset_decides_order_and_partition(corpus):
    opts = meta(corpus, seq_order_control_dataset="b")
    opts["datasets"]["b"] = hdf(corpus, "b.hdf", seq_ordering="random", partition_epoch=2)
    dataset = make_dataset(opts, "train")
    alone = make_dataset(hdf(corpus, "b.hdf", seq_ordering="random", partition_epoch=2), "b")
    for epoch in (1, 2, 3):
        alone.init_epoch(epoch)
        assert [t for t, _ in epoch_seqs(dataset, epoch)] == [alone.seq_tag(i) for i in range(alone.num_seqs())]


def test_meta_missing_tag_is_an_error_naming_the_dataset_and_tag(corpus):
    write_hdf(str(corpus["dir"] / "short.hdf"), [{"classes": corpus["classes"][i]} for i in range(NUM - 1)],
              tags=corpus["tags"][:NUM - 1], dims={"classes": 4})
    opts = meta(corpus)
    opts["datasets"]["b"] = hdf(corpus, "short.hdf")
    with pytest.raises(InvalidOptionError, match=r"sub-dataset 'b' has no sequence with the tag 'utt-5'") as info:
        make_dataset(opts, "train")
    assert "\n" not in str(info.value) and "dataset 'train'" in str(info.value)


def test_meta_seq_list_file_maps_differently_named_tags(corpus, tmp_path):
    # c.hdf names the sequences rec/0..; a pickled dict says which is which (entry i = the same sequence)
    write_hdf(str(tmp_path / "c.hdf"), [{"classes": corpus["classes"][i]} for i in range(NUM)],
              tags=[f"rec/{i}" for i in range(NUM)], dims={"classes": 4})
    chosen = [3, 0, 5]
    with open(tmp_path / "list.pkl", "wb") as handle:
        pickle.dump({"a": [corpus["tags"][i] for i in chosen], "b": [f"rec/{i}" for i in chosen]}, handle)
    opts = meta(corpus, seq_list_file=str(tmp_path / "list.pkl"))
    opts["datasets"]["b"] = hdf(corpus, "c.hdf")
    seqs = epoch_seqs(make_dataset(opts, "train"), 1)
    assert [t for t, _ in seqs] == [corpus["tags"][i] for i in chosen]
    for (tag, arrays), i in zip(seqs, chosen):
        np.testing.assert_array_equal(arrays["classes"], corpus["classes"][i])
        np.testing.assert_array_equal(arrays["data"], corpus["feats"][i])


def test_meta_keys_keep_their_own_lengths(corpus, tmp_path):
    # RETURNN does not require the keys of different sub-datasets to be equally long; neither do we
    write_hdf(str(tmp_path / "long.hdf"), [{"classes": np.concatenate([c, c])} for c in corpus["classes"]],
              tags=corpus["tags"], dims={"classes": 4})
    opts = meta(corpus)
    opts["datasets"]["b"] = hdf(corpus, "long.hdf")
    dataset = make_dataset(opts, "train")
    dataset.init_epoch(1)
    for i in range(NUM):
        assert dataset.seq_length(i) == {"data": len(corpus["feats"][i]), "classes": 2 * len(corpus["feats"][i])}


def test_meta_over_generated_datasets_follows_their_epochs():
    opts = {"class": "MetaDataset", "data_map": {"data": ("t", "data"), "copy": ("c", "data")},
            "datasets": {"t": {"class": "Task12AXDataset", "num_seqs": 4},
                         "c": {"class": "CopyTaskDataset", "num_seqs": 4, "nsymbols": 5, "minlen": 2, "maxlen": 6}}}
    dataset = make_dataset(opts, "train")
    alone = {k: make_dataset(v, k) for k, v in opts["datasets"].items()}
    for epoch in (1, 2):
        for sub in alone.values():
            sub.init_epoch(epoch)
        for tag, arrays in epoch_seqs(dataset, epoch):
            i = int(tag.split("-")[1])
            np.testing.assert_array_equal(arrays["data"], alone["t"].get_seq(i)["data"])
            np.testing.assert_array_equal(arrays["copy"], alone["c"].get_seq(i)["data"])


def test_meta_checks_class_indices_against_the_networks_dims(corpus):
    dataset = make_dataset(meta(corpus), "train")
    dataset.expect_dims({"classes": 2})
    dataset.init_epoch(1)
    # the file the classes come from, its own sequence number (utt-0 is b.hdf's sequence 1)
    with pytest.raises(DataContentError,
                       match=r"b\.hdf.: sequence 1 \(tag .utt-0.\): class index \d at frame \d+ >= dim 2 of data key"):
        for i in range(dataset.num_seqs()):
            dataset.get_seq(i)


# --- CombinedDataset -------------------------------------------------------------------------------------------

GENERATED = {"t": {"class": "Task12AXDataset", "num_seqs": 5},
             "d": {"class": "DummyDataset", "num_seqs": 3, "input_dim": 9, "output_dim": 4, "seq_len": 4}}
GENERATED_MAP = {("t", "data"): "data", ("t", "classes"): "classes", ("d", "data"): "data",
                 ("d", "classes"): "dummy_classes"}


@pytest.mark.parametrize("ordering", ["default", "random", "sorted", "random_dataset", "interleave"])
def test_combined_12ax_and_dummy_mixes_every_sequence_with_its_own_keys(ordering):
    dataset = make_dataset({"class": "CombinedDataset", "datasets": GENERATED, "data_map": GENERATED_MAP,
                            "seq_ordering": ordering}, "train")
    alone = {name: make_dataset(opts, name) for name, opts in GENERATED.items()}
    for epoch in (1, 2):
        for sub in alone.values():
            sub.init_epoch(epoch)
        dataset.init_epoch(epoch)
        seen = []
        for index in range(dataset.num_seqs()):
            arrays, name = dataset.get_seq(index), ("d" if dataset.corpus_index(index) < 3 else "t")
            sub_index = dataset.corpus_index(index) - (0 if name == "d" else 3)  # sub-datasets by name: d, t
            own = alone[name].get_seq(sub_index)
            np.testing.assert_array_equal(arrays["data"], own["data"])
            present, empty = ("dummy_classes", "classes") if name == "d" else ("classes", "dummy_classes")
            np.testing.assert_array_equal(arrays[present], own["classes"])
            assert arrays[empty].shape == (0,) and arrays[empty].dtype == np.int32
            assert dataset.seq_length(index)[empty] == 0
            seen.append((name, sub_index))
        assert sorted(seen) == [("d", i) for i in range(3)] + [("t", i) for i in range(5)]
    assert list(dataset.data_spec()) == ["data", "classes", "dummy_classes"]
    assert dataset.labels["classes"] == ["L", "R"]


def test_combined_default_and_random_dataset_keep_each_sub_datasets_order():
    datasets = dict(GENERATED, t=dict(GENERATED["t"], seq_ordering="reverse"))
    for ordering in ("default", "random_dataset", "interleave"):
        dataset = make_dataset({"class": "CombinedDataset", "datasets": datasets, "data_map": GENERATED_MAP,
                                "seq_ordering": ordering}, "train")
        dataset.init_epoch(1)
        order = [dataset.corpus_index(i) for i in range(dataset.num_seqs())]
        assert [i for i in order if i >= 3] == [7, 6, 5, 4, 3], ordering
        assert [i for i in order if i < 3] == [0, 1, 2], ordering
        if ordering == "default":
            assert order == [0, 1, 2, 7, 6, 5, 4, 3]


def test_combined_interleave_spreads_the_smaller_dataset_evenly():
    dataset = make_dataset({"class": "CombinedDataset", "datasets": GENERATED, "data_map": GENERATED_MAP,
                            "seq_ordering": "interleave"}, "train")
    dataset.init_epoch(1)
    picks = ["d" if dataset.corpus_index(i) < 3 else "t" for i in range(dataset.num_seqs())]
    # the next pick is the sub-dataset whose fraction done after it is lower (ties: the first by name, d)
    done = {"d": 0, "t": 0}
    for pick in picks:
        fractions = {n: (done[n] + 1) / size for n, size in (("d", 3), ("t", 5)) if done[n] < size}
        assert pick == min(sorted(fractions), key=lambda n: fractions[n])
        done[pick] += 1


def test_combined_sampling_sizes_take_the_next_sequences_each_epoch():
    dataset = make_dataset({"class": "CombinedDataset", "datasets": GENERATED, "data_map": GENERATED_MAP,
                            "sampling_sizes": {"d": 2, "t": 4}}, "train")
    for epoch in (1, 2, 3):
        dataset.init_epoch(epoch)
        order = [dataset.corpus_index(i) for i in range(dataset.num_seqs())]
        start_d, start_t = ((epoch - 1) * 2) % 3, ((epoch - 1) * 4) % 5
        assert order == [(start_d + k) % 3 for k in range(2)] + [3 + (start_t + k) % 5 for k in range(4)]


# --- errors -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("change, error, match", [
    (dict(data_map={"data": ("aa", "data")}), InvalidOptionError,
     r"option 'data_map' names the sub-dataset 'aa', which 'datasets' does not have.*did you mean 'a'"),
    (dict(data_map={"data": ("a", "feats")}), InvalidOptionError,
     r"option 'data_map' maps the data key 'feats' of sub-dataset 'a', which it does not have \(it has: data\)"),
    (dict(data_map={("a", "data"): "data"}), InvalidOptionError, r"'data_map'.*CombinedDataset's"),
    (dict(data_map={"data": "a"}), InvalidOptionError, r"'data_map' entry 'data'.*\(sub-dataset name, its data key"),
    (dict(data_map={"classes": ("b", "classes")}), InvalidOptionError, r"no 'data' entry.*seq_order_control_dataset"),
    (dict(datasets={}), InvalidOptionError, r"'datasets' must be a non-empty dict"),
    (dict(seq_ordering="random", seq_order_control_dataset="b"), InvalidOptionError,
     r"'seq_ordering' has no effect with seq_order_control_dataset 'b'.*datasets\['b'\]"),
    (dict(seq_order_control_dataset="c"), InvalidOptionError,
     r"option 'seq_order_control_dataset' names 'c', which 'datasets' does not have \(it has: a, b\)"),
    (dict(seq_lens_file="lens.json"), InvalidOptionError, r"'seq_lens_file' of RETURNN's MetaDataset is not supp"),
    (dict(data_dims={"classes": [5, 1]}), InvalidOptionError, r"'data_dims' says 'classes' is \(5, 1\).*\(4, 1\)"),
    (dict(seq_list_file="missing.txt"), DataFileError, r"missing\.txt.*cannot read the seq list"),
    (dict(seq_ordring="random"), UnknownOptionError, r"did you mean 'seq_ordering'"),
])
def test_meta_option_errors(corpus, change, error, match):
    with pytest.raises(error, match=match) as info:
        make_dataset(dict(meta(corpus), **change), "train")
    assert "\n" not in str(info.value)


def test_sub_dataset_errors_name_the_sub_dataset(corpus):
    opts = meta(corpus)
    opts["datasets"]["b"] = {"class": "HDFDataset", "files": []}
    with pytest.raises(InvalidOptionError, match=r"dataset 'train/b': option 'files' must list at least one file"):
        make_dataset(opts, "train")
    opts["datasets"]["b"] = {"class": "HDFDatset", "files": []}
    with pytest.raises(ConfigError, match=r"dataset 'train/b'.*did you mean 'HDFDataset'"):
        make_dataset(opts, "train")


def test_unused_datasets_and_ignored_orders_are_noticed(corpus, capsys):
    opts = meta(corpus, data_map={"data": ("a", "data")})
    make_dataset(opts, "train")
    assert "datasets b are not used by 'data_map'" in capsys.readouterr().err
    opts = meta(corpus)
    opts["datasets"]["b"] = hdf(corpus, "b.hdf", seq_ordering="sorted", partition_epoch=3)
    make_dataset(opts, "train")
    assert "seq_ordering, partition_epoch of sub-dataset 'b' has no effect" in capsys.readouterr().err


def combined(**change):
    return dict({"class": "CombinedDataset", "datasets": GENERATED, "data_map": GENERATED_MAP}, **change)


@pytest.mark.parametrize("change, match", [
    (dict(data_map={("t", "data"): "data", ("t", "classes"): "data"}),
     r"'data_map' maps both \('t', 'data'\) and \('t', 'classes'\) to 'data'"),
    (dict(data_map={("t", "data"): "x", ("d", "classes"): "x"}), r"'data_map' maps \('d', 'classes'\) and .*differ"),
    (dict(data_map={("x", "data"): "data"}), r"'data_map' names the sub-dataset 'x'"),
    (dict(data_map={"data": ("t", "data")}), r"'data_map'.*MetaDataset's"),
    (dict(seq_ordering="interleave", partition_epoch=2), r"'partition_epoch' cannot be combined with .*'interleave'"),
    (dict(sampling_sizes={"t": 2}), r"'sampling_sizes' must give a size for each.*missing: d"),
    (dict(sampling_sizes=0), r"'sampling_sizes' entry '\w' must be a positive int"),
    (dict(sampling_sizes=2, seq_ordering="random_dataset"), r"'sampling_sizes' cannot be combined"),
    (dict(sampling_sizes=2, partition_epoch=2), r"'partition_epoch' cannot be combined with 'sampling_sizes'"),
    (dict(interleave_gumbel_scale=1.0), r"'interleave_gumbel_scale' has no effect with seq_ordering 'default'"),
    (dict(seq_ordering="interleave", interleave_gumbel_scale="all"), r"'interleave_gumbel_scale' must be a num"),
    (dict(seq_ordering="random_datset"), r"'seq_ordering' has an unknown kind.*random_dataset, interleave -- "
                                         r"did you mean 'random_dataset'"),
])
def test_combined_option_errors(change, match):
    with pytest.raises(InvalidOptionError, match=match) as info:
        make_dataset(combined(**change), "train")
    assert "\n" not in str(info.value) and "dataset 'train'" in str(info.value)


def test_classes_are_exported():
    assert MetaDataset.__name__ == "MetaDataset" and CombinedDataset.__name__ == "CombinedDataset"


def test_meta_seq_list_may_name_a_sequence_twice(corpus, tmp_path):
    # as in RETURNN, the list is the corpus: a tag listed twice is read twice
    (tmp_path / "twice.txt").write_text("utt-2\nutt-4\nutt-2\n")
    dataset = make_dataset(meta(corpus, seq_list_file=str(tmp_path / "twice.txt")), "train")
    seqs = epoch_seqs(dataset, 1)
    assert [t for t, _ in seqs] == ["utt-2", "utt-4", "utt-2"]
    np.testing.assert_array_equal(seqs[2][1]["classes"], corpus["classes"][2])
