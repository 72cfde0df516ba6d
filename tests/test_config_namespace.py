"""The config workflow as RETURNN gives it (issue 11, part 1): the `config` object and its getters with `++`
overrides, `#` entries of a network, `num_outputs` dicts, RETURNN's Dim constructor forms, eval strings that
reach a config function through `self.network.get_config()`, and ':exp' error measures.

The expected getter results in PROBE_EXPECTED are what RETURNN 1.20261022's `Config` gave for the same file and
command line (parse_cmd_args, load_file, parse_cmd_args, as its `init_config` does)."""

import math

import numpy as np
import pytest

from netcompiler import Dim, DimensionTag, FeatureDim, SpatialDim
from netcompiler.config import Config, load_config
from netcompiler.config_namespace import get_global_config
from netcompiler.engine.learning_rate import LearningRateControl, score_names
from netcompiler.errors import ConfigError, InvalidOptionError
from netcompiler.network import build_from_dict, build_network

PROBE = '''\
early = 3
from_file = config.int("early", 7)
ov_int = config.int("n", 5)
ov_typed = config.typed_value("n", 5)
ov_value = config.value("n", "d")
ov_list = config.list("l")
ov_float = config.float("n", 1.0)
ov_bool = config.bool("b", False)
has_n = config.has("n")
missing_value = config.value("missing", None)
missing_list = config.list("missing")
missing_int = config.int("missing", 11)
none_key = None
none_int = config.int("none_key", 4)
none_value = config.value("none_key", "dd")
none_typed = config.typed_value("none_key", "dd")
none_list = config.list("none_key")
tup = (1, 2)
tup_value = config.value("tup", None)
s = "1"
str_list = config.list("s")
comma = "a,b"
comma_list = config.list("comma")
int_bool = 1
ib = config.bool("int_bool", None)
fl_s = "inf"
fl = config.float("fl_s", 0.0)
same_object = globals()["config"] is config
extern_data = {"data": {"dim": 3}}
network = {"output": {"class": "copy", "from": "data"}}
'''
PROBE_ARGS = ["++early", "9", "++n", "4", "++l", "x,y", "++b", "yes"]
PROBE_EXPECTED = {
    "early": 9, "from_file": 3, "ov_int": 4, "ov_value": "4", "ov_list": ["x", "y"], "ov_float": 4.0,
    "ov_bool": True, "has_n": True, "missing_value": None, "missing_list": [], "missing_int": 11, "none_int": None,
    "none_value": "dd", "none_typed": None, "none_list": [], "tup_value": "1,2", "str_list": ["1"],
    "comma_list": ["a,b"], "ib": True, "fl": math.inf, "same_object": True,
}


PROBE_INDEXED = '''\
flag = True
fi = config.int("flag", 0)
ff = config.float("flag", 0.0)
hidden = [1, 2]
hv = config.value("hidden", None, index=1)
hi = config.int("hidden", 0, index=1)
ht = config.typed_value("hidden", None, index=0)
cv = config.value("h", None, index=1)
ci = config.int("k", 0, index=1)
il = config.int_list("k")
fl = config.float_list("k")
ist = config.is_true("flag")
ist2 = config.is_true("missing")
bo = config.bool_or_other("h", None)
opt = config.opt_typed_value("h", None)
opt_k = config.opt_typed_value("k", None)
extern_data = {"data": {"dim": 3}}
network = {"output": {"class": "copy", "from": "data"}}
'''
PROBE_INDEXED_ARGS = ["++h", "a,b", "++k", "3,4"]
PROBE_INDEXED_EXPECTED = {
    "fi": True, "ff": True, "hv": "2", "hi": 2, "ht": 1, "cv": "b", "ci": 4, "il": [3, 4], "fl": [3.0, 4.0],
    "ist": True, "ist2": False, "bo": "a", "opt": "a,b", "opt_k": "3,4",
}


def _write(tmp_path, text, name="c.py"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_getters_give_what_returnn_gives(tmp_path):
    values = load_config(_write(tmp_path, PROBE), PROBE_ARGS).values
    assert {key: values[key] for key in PROBE_EXPECTED} == PROBE_EXPECTED


def test_indexed_and_list_getters_give_what_returnn_gives(tmp_path):
    values = load_config(_write(tmp_path, PROBE_INDEXED), PROBE_INDEXED_ARGS).values
    assert {key: values[key] for key in PROBE_INDEXED_EXPECTED} == PROBE_INDEXED_EXPECTED


def test_typed_value_of_a_command_line_key_is_its_value(tmp_path):
    """The one departure: RETURNN gives the default (5) while the file runs; netcompiler the override."""
    assert load_config(_write(tmp_path, PROBE), PROBE_ARGS).values["ov_typed"] == 4
    assert load_config(_write(tmp_path, PROBE)).values["ov_typed"] == 5


def test_after_loading_the_command_line_wins_and_the_object_stays_reachable(tmp_path):
    config = load_config(_write(tmp_path, PROBE), PROBE_ARGS)
    assert get_global_config() is config.namespace
    assert config.namespace.typed_value("early") == 9 and config.namespace.int("n", 0) == 4
    assert config.values["n"] == 4 and config.values["l"] == "x,y"


def test_a_typed_string_is_no_int_as_in_returnn(tmp_path):
    with pytest.raises(ConfigError, match=r"config.int\('s'\): config key 's' is '1' \(str\), not an int"):
        load_config(_write(tmp_path, 's = "1"\nx = config.int("s", 0)\n'))


def test_a_command_line_text_that_is_no_int_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match=r"\+\+k on the command line is 'many'"):
        load_config(_write(tmp_path, 'x = config.int("k", 0)\n'), ["++k", "many"])


def test_bool_reads_returnn_words_and_refuses_others(tmp_path):
    path = _write(tmp_path, 'x = config.bool("k", None)\n')
    for text, want in (("0", False), ("1", True), ("off", False), ("True", True), ("", None)):
        assert load_config(path, ["++k", text]).values["x"] is want
    with pytest.raises(ConfigError, match="not a bool"):
        load_config(path, ["++k", "maybe"])


def test_minus_value_written_returnn_style(tmp_path):
    config = load_config(_write(tmp_path, 'x = config.float("t", 0.0)\n'), ["++t", "+-0.5"])
    assert config.values["x"] == -0.5 and config.values["t"] == -0.5


# --- '#' entries -----------------------------------------------------------------------------------------
NET_WITH_META = {
    "#config": {"batch_size": 100},
    "#repetition": 2,
    "#copy_param_mode": "subset",
    "#info": {"x": 1},
    "sub": {"class": "subnetwork", "from": "data", "subnetwork": {"#info": "inner", "#config": {"batch_size": 1},
                                                                  "output": {"class": "copy", "from": "data"}}},
    "output": {"class": "copy", "from": "sub"},
}


def test_meta_entries_are_no_layers_and_each_gets_a_notice():
    config = Config({"network": NET_WITH_META, "extern_data": {"data": {"dim": 3}}, "batch_size": 5000})
    network = build_network(config)
    assert sorted(layer.name for layer in network.all_layers() if layer.layer_class != "source") == \
        ["output", "sub", "sub/output"]
    notices = " | ".join(network.notices)
    assert "'#repetition'" in notices and "pretrain" in notices and "'#copy_param_mode'" in notices
    assert "network entry '#info' is no layer" in notices and "network 'sub' entry '#info'" in notices
    assert "network 'sub' entry '#config': RETURNN reads it only in the top-level network" in notices


def test_meta_config_sets_the_settings_as_returnn_does():
    config = Config({"network": NET_WITH_META, "batch_size": 5000})
    assert config.values["batch_size"] == 100
    assert any("'#config' sets 'batch_size' to 100 (the config has 5000)" in n for n in config.notices)


@pytest.mark.parametrize("entry, words", [
    ({"#config": {"max_seqs": 3}}, "'max_seqs', which the config does not define"),
    ({"#config": {"learning_rate": 0.1}}, "current epoch's learning rate only"),
    ({"#config": [1]}, "must be a dict of setting name -> value"),
])
def test_meta_config_errors(entry, words):
    with pytest.raises(ConfigError, match=words):
        Config({"network": {**entry, "output": {"class": "copy", "from": "data"}}, "learning_rate": 1.0})


def test_meta_trainable_false_is_refused():
    with pytest.raises(ConfigError, match="'#trainable': False"):
        build_from_dict({"#trainable": False, "output": {"class": "copy", "from": "data"}}, {"data": {"dim": 3}})
    build_from_dict({"#trainable": True, "output": {"class": "copy", "from": "data"}}, {"data": {"dim": 3}})


# --- num_outputs as dicts, Dim forms --------------------------------------------------------------------
def test_num_outputs_dict_entries_are_data_options():
    config = Config({"num_outputs": {"data": {"dim": 4, "shape": (None, 4)}, "classes": {"dim": 3, "sparse": True},
                                     "old": [5, 1]},
                     "network": {"output": {"class": "softmax", "from": "data", "loss": "ce", "target": "classes"}}})
    network = build_network(config)
    assert network.extern_data["data"].feature_dim.size == 4 and not network.extern_data["data"].sparse
    assert network.extern_data["classes"].sparse and network.extern_data["classes"].sparse_dim.size == 3
    assert network.extern_data["old"].sparse_dim.size == 5
    three = build_network(Config({"num_outputs": {"data": [4, 3], "classes": 2},
                                  "network": {"output": {"class": "copy", "from": "data"}}})).extern_data["data"]
    assert [d.size for d in three.dims] == [None, None, None, 4] and three.feature_dim.size == 4
    for sparse in (False, True):
        data = build_network(Config({"num_inputs": 7, "sparse_input": sparse, "num_outputs": 2, "network": {
            "output": {"class": "copy", "from": "data"}}})).extern_data["data"]
        assert data.sparse is sparse and (data.sparse_dim if sparse else data.feature_dim).size == 7
    assert network.layers["output"].output.feature_dim.size == 3


@pytest.mark.parametrize("ndim", [None, 0, True, "2"])
def test_num_outputs_with_a_bad_ndim_is_a_config_error(ndim):
    config = Config({"num_outputs": {"data": [4, 2], "classes": [3, ndim]},
                     "network": {"output": {"class": "copy", "from": "data"}}})
    with pytest.raises(ConfigError, match=r"num_outputs\['classes'\]: ndim must be an int >= 1"):
        build_network(config)


def test_num_outputs_with_an_ndim_of_more_axes_than_data_has_is_a_config_error():
    # found by test_config_mutations: ndim 2**63 - 1 made a shape tuple of that many axes (MemoryError)
    config = Config({"num_outputs": {"data": [4, 2], "classes": [3, 2 ** 63 - 1]},
                     "network": {"output": {"class": "copy", "from": "data"}}})
    with pytest.raises(ConfigError, match=r"num_outputs\['classes'\]: ndim 9223372036854775807 is more axes than a "
                                          r"data entry has \(at most 8\)"):
        build_network(config)


def test_returnn_dim_constructor_forms():
    time = Dim(kind=Dim.Types.Spatial, description="time", dimension=None)
    feat = DimensionTag(kind=Dim.Types.Feature, description="feat", dimension=5)
    assert (time.kind, time.description, time.size) == ("spatial", "time", None)
    assert (feat.kind, feat.size) == ("feature", 5) and DimensionTag is Dim
    assert Dim(description="u", dimension=2, kind=Dim.Types.Unspecified).kind == "spatial"
    assert Dim.Types.Time == Dim.Types.Spatial and Dim.Types.Batch == "batch"
    assert SpatialDim("s", dimension=3).size == 3 and FeatureDim("f", dimension=4).kind == "feature"
    assert FeatureDim("g", 6).size == 6 and SpatialDim("t").size is None
    assert Dim(kind=Dim.Types.Spatial, description="x").size is None  # old RETURNN configs leave it out
    with pytest.raises(TypeError, match="give the size once"):
        Dim(3, dimension=3)
    with pytest.raises(ValueError, match="static size"):
        FeatureDim("h")


def test_a_config_declaring_dims_returnn_style_builds(tmp_path):
    text = '''
from netcompiler import Dim, DimensionTag, SpatialDim, FeatureDim, batch_dim
time_dim = DimensionTag(kind=DimensionTag.Types.Spatial, description="time", dimension=None)
feat_dim = FeatureDim("feat", dimension=config.int("feat", 7))
extern_data = {"data": {"dim_tags": [batch_dim, time_dim, feat_dim]}}
network = {"output": {"class": "linear", "from": "data", "n_out": 2}}
'''
    network = build_network(load_config(_write(tmp_path, text), ["++feat", "5"]))
    data = network.extern_data["data"]
    assert data.dims[1].description == "time" and data.dims[2].size == 5


# --- self.network.get_config() in eval strings ----------------------------------------------------------
SPEC_AUGMENT_LIKE = '''
def transform(x, network):
    return network.cond_on_train(lambda: x * config.float("train_scale", 1.0), lambda: -x)
extern_data = {"data": {"dim": 3}}
network = {
    "source": {"class": "eval", "from": "data",
               "eval": "self.network.get_config().typed_value('transform')(source(0), network=self.network)"},
    "output": {"class": "copy", "from": "source"},
}
'''


@pytest.mark.parametrize("training", [True, False])
def test_eval_reaches_a_config_function_through_get_config(tmp_path, training):
    import tensorflow as tf  # noqa: F401  (the eval runs on TensorFlow)
    from layer_harness import random_batch, valid_mask

    from netcompiler.emit.model import CompiledNetwork

    network = build_network(load_config(_write(tmp_path, SPEC_AUGMENT_LIKE), ["++train_scale", "3"]))
    assert network.get_config().float("train_scale") == 3.0
    model = CompiledNetwork(network)
    inputs, lengths = random_batch(network)
    ctx = model.forward(inputs, lengths, training=training)
    got = ctx.value(network.layers["output"]).raw.numpy()
    want = inputs["data"] * 3.0 if training else -inputs["data"]
    data = network.layers["output"].output
    mask = np.broadcast_to(valid_mask(data, data.time_dim, lengths["data"], want.shape), want.shape)
    np.testing.assert_allclose(got[mask], want[mask], rtol=1e-6)


# --- ':exp' error measures ----------------------------------------------------------------------------------
def test_exp_scores_are_recorded_with_calculate_exp_loss_and_decide_newbob():
    names = score_names(["output"], with_dev=True)
    control = LearningRateControl.from_config({"learning_rate": 1.0, "learning_rate_control": "newbob",
                                               "learning_rate_control_error_measure": "dev_score_output:exp",
                                               "calculate_exp_loss": True, "newbob_learning_rate_decay": 0.5})
    control.check_error_measure(names)
    control.record(1, {"dev_score_output": 1.0, "train_score_output": 2.0, "dev_error_output": 0.5})
    assert control.epochs[1].scores["dev_score_output:exp"] == pytest.approx(math.e)
    assert "dev_error_output:exp" not in control.epochs[1].scores
    control.record(2, {"dev_score_output": 1.0001, "train_score_output": 2.0, "dev_error_output": 0.1})
    assert control.error_key(control.epochs[2].scores) == "dev_score_output:exp"
    assert control.learning_rate_for_epoch(3) == 0.5  # exp rose by 0.01%: no improvement, the rate decays


def test_exp_measure_without_calculate_exp_loss_says_what_to_set():
    control = LearningRateControl(learning_rate=0.1, error_measure="dev_score_output:exp")
    with pytest.raises(InvalidOptionError, match="calculate_exp_loss = True"):
        control.check_error_measure(score_names(["output"], with_dev=True))


def test_config_functions_see_the_final_settings(tmp_path):
    """As RETURNN's own tests of its Config have it: a function of the config reads the global the command line
    set, a typed setting becomes the command line's value (max_seq_length 0), and config.set changes what the
    object answers."""
    text = '''
task = config.value("task", "train")
max_seq_length = {"bpe": 75}
def current_task():
    return task
def task_from_object():
    return config.value("task", "train")
def max_len():
    return max_seq_length
'''
    config = load_config(_write(tmp_path, text), ["++task", "search", "++max_seq_length", "0"])
    assert config.values["current_task"]() == "search" and config.values["max_len"]() == 0
    config.namespace.set("task", "eval")
    assert config.values["task_from_object"]() == "eval"
    assert config.namespace.typed_dict["task"] == "eval" and config.namespace.dict == {}
    loading = load_config(_write(tmp_path, 'texts = dict(config.dict)\n', "d.py"), ["++a", "1,2", "++b", "x"])
    assert loading.values["texts"] == {"a": ["1", "2"], "b": ["x"]}


SPEC_AUGMENT_AS_DATA = '''
seen = {}
def transform(data, network):
    import tensorflow as tf
    x = data.placeholder
    seen.update(batch=data.batch_dim_axis, time=data.time_dim_axis, feature=data.feature_dim_axis, dim=data.dim,
                lengths=data.get_sequence_lengths().numpy().tolist(), train=network.train_flag)
    scale = tf.where(tf.greater_equal(network.global_train_step, 1000), 2.0, 1.0)
    return network.cond_on_train(lambda: x * scale, lambda: x - 1.0)
extern_data = {"data": {"dim": 3}}
network = {
    "source": {"class": "eval", "from": "data",
               "eval": "self.network.get_config().typed_value('transform')(source(0, as_data=True), network=self.network)"},
    "output": {"class": "copy", "from": "source"},
}
'''


@pytest.mark.parametrize("training, step, factor, shift", [(True, 1500, 2.0, 0.0), (True, 10, 1.0, 0.0),
                                                            (False, None, 1.0, -1.0)])
def test_spec_augment_with_as_data_and_the_step_counter(tmp_path, training, step, factor, shift):
    import tensorflow as tf
    from layer_harness import random_batch

    from netcompiler.emit.model import CompiledNetwork

    config = load_config(_write(tmp_path, SPEC_AUGMENT_AS_DATA))
    network = build_network(config)
    model = CompiledNetwork(network)
    if step is not None:
        model.global_train_step = tf.Variable(step, dtype=tf.int64)
    inputs, lengths = random_batch(network)
    got = model.forward(inputs, lengths, training=training).value(network.layers["output"]).raw.numpy()
    for b, n in enumerate(lengths["data"]):
        np.testing.assert_allclose(got[b, :n], inputs["data"][b, :n] * factor + shift, rtol=1e-6)
    seen = config.values["seen"]
    assert (seen["batch"], seen["time"], seen["feature"], seen["dim"]) == (0, 1, 2, 3)
    assert seen["lengths"] == list(lengths["data"]) and seen["train"] is training


def test_the_step_counter_in_training_without_a_trainer_is_a_clear_error(tmp_path):
    from layer_harness import random_batch

    from netcompiler.emit.model import CompiledNetwork

    network = build_network(load_config(_write(tmp_path, SPEC_AUGMENT_AS_DATA)))
    inputs, lengths = random_batch(network)
    with pytest.raises(InvalidOptionError, match="global_train_step: this training run has no step counter"):
        CompiledNetwork(network).forward(inputs, lengths, training=True)


def test_eval_given_as_a_function_is_called_with_the_names_as_keywords(tmp_path):
    """RETURNN's `"eval": transform` form, where the function reaches the layer through kwargs["self"]."""
    from layer_harness import random_batch

    from netcompiler.emit.model import CompiledNetwork

    text = '''
def transform(source, **kwargs):
    data = source(0, as_data=True)
    network = kwargs["self"].network
    return network.cond_on_train(lambda: data.placeholder * 4.0, lambda: kwargs["tf"].abs(source(0)))
extern_data = {"data": {"dim": 3}}
network = {"output": {"class": "eval", "from": "data", "eval": transform}}
'''
    network = build_network(load_config(_write(tmp_path, text)))
    inputs, lengths = random_batch(network)
    for training, want in ((True, inputs["data"] * 4.0), (False, np.abs(inputs["data"]))):
        got = CompiledNetwork(network).forward(inputs, lengths, training=training)
        got = got.value(network.layers["output"]).raw.numpy()
        for b, n in enumerate(lengths["data"]):
            np.testing.assert_allclose(got[b, :n], want[b, :n], rtol=1e-6)


def test_as_data_of_a_time_major_input(tmp_path):
    from layer_harness import random_batch

    from netcompiler.emit.model import CompiledNetwork

    text = '''
seen = {}
def transform(data, network):
    import tensorflow as tf
    seen.update(batch=data.batch_dim_axis, time=data.time_dim_axis, shape=data.shape, dtype=data.dtype,
                sparse=data.sparse, batch_ndim=data.batch_ndim)
    batch_major = data.get_placeholder_as_batch_major()  # [B, T, F]
    return tf.transpose(batch_major * tf.cast(tf.range(tf.shape(batch_major)[0]) + 1, tf.float32)[:, None, None],
                        [1, 0, 2])
extern_data = {"data": {"dim": 3, "shape": (None, 3), "time_dim_axis": 0, "batch_dim_axis": 1}}
network = {"output": {"class": "eval", "from": "data",
                      "eval": "self.network.get_config().typed_value('transform')(source(0, as_data=True), self.network)"}}
'''
    config = load_config(_write(tmp_path, text))
    network = build_network(config)
    inputs, lengths = random_batch(network)
    got = CompiledNetwork(network).forward(inputs, lengths, training=False).value(network.layers["output"])
    got = got.raw.numpy()
    assert got.shape == inputs["data"].shape  # [T, B, F]
    for b, n in enumerate(lengths["data"]):
        np.testing.assert_allclose(got[:n, b], inputs["data"][:n, b] * (b + 1), rtol=1e-6)
    assert config.values["seen"] == {"batch": 1, "time": 0, "shape": (None, 3), "dtype": "float32", "sparse": False,
                                     "batch_ndim": 3}
