"""Template-time checks for what emission cannot run (issue 10, item 5): `dump-net` refuses it with an error that
names the layer, the option and what is expected, instead of accepting it and letting TensorFlow crash later."""

import time

import pytest

from netcompiler.dump import format_dot, format_json, format_text
from netcompiler.errors import ConfigError, InvalidOptionError
from netcompiler.limits import INT64_MAX, beyond_int64, fits_dtype, is_int
from netcompiler.network import build_from_dict, nesting_depth

EXTERN = {"data": {"dim": 3}, "classes": {"dim": 5, "sparse": True}}


def refused(net, *phrases, extern=EXTERN, error=ConfigError):
    with pytest.raises(error) as info:
        build_from_dict(net, extern)
    message = str(info.value)
    for phrase in phrases:
        assert phrase in message, message
    assert "\n" not in message
    return info.value


def linear(**opts):
    return {"output": dict({"class": "linear", "n_out": 4, "from": "data"}, **opts)}


def test_is_int_takes_python_and_numpy_ints_but_no_bools_or_numbers_of_other_kinds():
    np = pytest.importorskip("numpy")
    assert all(is_int(v) for v in (0, -3, 2 ** 70, np.int64(5), np.uint8(1)))
    assert not any(is_int(v) for v in (True, False, np.bool_(True), 1.0, np.float32(2), "3", None))


# --- integers beyond int64 --------------------------------------------------------------------------------
@pytest.mark.parametrize("n_out", [2 ** 63, 2 ** 64, -2 ** 63 - 1, 10 ** 5000], ids=["2**63", "2**64", "-2**63-1",
                                                                                "10**5000"])
def test_n_out_beyond_int64(n_out):
    error = refused(linear(n_out=n_out), "layer 'output'", "option 'n_out'", "does not fit in int64",
                    "use a value in", error=InvalidOptionError)
    assert error.option == "n_out"


def test_int64_limit_itself_is_no_error_of_the_option_check():
    # 2**63 - 1 fits int64; the layer is then refused for its parameter's element count, not for the option
    refused(linear(n_out=INT64_MAX), "parameter 'W'", "more than int64 can count")


def test_sizes_in_lists_beyond_int64():
    refused({"output": {"class": "variable", "shape": [3, 2 ** 70], "add_batch_axis": False}},
            "option 'shape'", "does not fit in int64")


def test_derived_size_beyond_int64():
    # each size fits, their concatenation does not
    part = {"class": "range", "limit": 2 ** 62, "dtype": "int64"}
    net = {"a": part, "b": dict(part), "output": {"class": "copy", "from": ["a", "b", "a"]}}
    refused(net, "layer 'output'", "does not fit in int64")


@pytest.mark.parametrize("key,size", [("dim", 2 ** 63), ("shape", (None, 2 ** 63)), ("dim", 10 ** 5000)],
                         ids=["dim", "shape", "dim-5000-digits"])
def test_extern_data_sizes_beyond_int64(key, size):
    extern = {"data": {key: size} if key == "dim" else {"shape": size, "dim": None}}
    refused({"output": {"class": "copy", "from": "data"}}, "extern_data 'data'", "does not fit in int64",
            extern=extern)


@pytest.mark.parametrize("key,value", [("num_inputs", 2 ** 63), ("num_outputs", {"classes": [10 ** 5000, 1]})],
                         ids=["num_inputs", "num_outputs-5000-digits"])
def test_num_inputs_outputs_beyond_int64(key, value):
    from netcompiler.config import Config
    from netcompiler.network import build_network

    with pytest.raises(ConfigError, match=f"config key '{key}': .*does not fit in int64"):
        build_network(Config({key: value, "network": {"output": {"class": "copy", "from": "data"}}}))


def test_beyond_int64_walks_nested_values_without_recursion():
    deep = [1]
    for _ in range(10000):
        deep = [deep]
    assert beyond_int64(deep) is None
    assert beyond_int64({"a": (1, [2, {"b": 2 ** 63}])}) == 2 ** 63
    assert beyond_int64([True, -2 ** 63]) is None


# --- range, compare, constant: values the dtype cannot hold -----------------------------------------------
@pytest.mark.parametrize("option,value", [("delta", float("inf")), ("delta", float("-inf")), ("start", float("nan")),
                                          ("limit", float("inf")), ("limit", float("nan"))])
def test_range_needs_finite_numbers(option, value):
    opts = {"class": "range", "limit": 10}
    opts[option] = value
    error = refused({"output": opts}, "layer 'output'", f"option '{option}'", "finite")
    assert error.option == option


def test_range_values_beyond_its_int_dtype():
    refused({"output": {"class": "range", "start": 2 ** 40, "limit": 2 ** 40 + 3}}, "dtype' int32 cannot hold",
            "use 'int64'")
    build_from_dict({"output": {"class": "range", "start": 2 ** 40, "limit": 2 ** 40 + 3, "dtype": "int64"}}, EXTERN)


@pytest.mark.parametrize("value", [1e300, 2 ** 40, -1e19, 3e9])
def test_compare_int_inputs_with_a_value_the_dtype_cannot_hold(value):
    net = {"x": {"class": "cast", "dtype": "int32", "from": "data"},
           "output": {"class": "compare", "kind": "less", "value": value, "from": "x"}}
    error = refused(net, "layer 'output'", "option 'value'", "does not fit the inputs' dtype int32",
                    "-2147483648 .. 2147483647", "cast")
    assert error.option == "value"


def test_compare_values_that_fit():
    for value in (2.5, 3.0, float("inf"), float("nan"), 2 ** 31 - 1):  # fractional ones compare in float32
        build_from_dict({"output": {"class": "compare", "kind": "less", "value": value, "from": "data:classes"}},
                        EXTERN)
    refused({"output": {"class": "compare", "kind": "less", "value": True, "from": "data"}},
            "cannot be compared with float32")


def test_constant_value_beyond_its_dtype():
    refused({"output": {"class": "constant", "value": 300, "dtype": "int8"}}, "option 'value' has 300",
            "dtype int8", "-128 .. 127")
    refused({"output": {"class": "constant", "value": [1, 2 ** 63]}}, "does not fit in int64")
    assert fits_dtype(2 ** 63, "uint64") and not fits_dtype(-1, "uint8") and fits_dtype(1e300, "float32")


# --- initializers -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("net,option,name", [
    (linear(forward_weights_init="glorot_unifrom"), "forward_weights_init", "glorot_uniform"),
    (linear(bias_init="zeroes"), "bias_init", "zeros"),
    ({"output": {"class": "variable", "shape": [3], "init": {"class": "orthogonl"}}}, "init", "orthogonal"),
    ({"output": {"class": "rec", "unit": "lstm", "n_out": 4, "from": "data", "recurrent_weights_init":
      "random_normal_initialiser(stddev=0.1)"}}, "recurrent_weights_init", "random_normal_initializer"),
])
def test_unknown_initializer_names(net, option, name):
    error = refused(net, "layer 'output'", f"option '{option}'", "unknown initializer", f"did you mean '{name}'?",
                    error=InvalidOptionError)
    assert error.option == option


def test_unreadable_initializer():
    refused(linear(forward_weights_init="random_normal(0.1"), "option 'forward_weights_init'", "cannot be read",
            "random_normal_initializer(stddev=0.1)")
    refused(linear(forward_weights_init="random_normal(*a)"), "cannot be read")


def test_known_initializers_build():
    for init in ("xavier", "random_normal_initializer(mean=0.0, stddev=0.1)", {"class": "zeros"}, 0.5,
                 "variance_scaling_initializer(factor=2.0, mode='fan_in')"):
        build_from_dict(linear(forward_weights_init=init), EXTERN)


def test_the_template_check_needs_no_tensorflow():
    import subprocess
    import sys
    code = ("import sys; from netcompiler.initializer_spec import parse_initializer; "
            "import netcompiler.layer_base, netcompiler.network; "
            "print(parse_initializer('xavier', 'l', 'o')[0]); print('tensorflow' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["GlorotUniform", "False"]


# --- a batch axis from nowhere ----------------------------------------------------------------------------
@pytest.mark.parametrize("layer", [{"class": "constant", "value": 1.0, "with_batch_dim": True},
                                   {"class": "variable", "shape": [3], "add_batch_axis": True}])
def test_batch_axis_without_any_input(layer):
    # a deliberate departure: RETURNN builds these with a batch size that nothing determines
    refused({"output": layer}, "layer 'output'", "batch axis", "reads no extern data", "add_batch_axis=False")


def test_length_dtype_has_no_effect_and_says_so():
    net = build_from_dict({"output": {"class": "length", "dtype": "int64", "from": "data"}}, EXTERN)
    assert net.layers["output"].output.dtype == "int32"  # as in RETURNN
    assert any("'dtype' 'int64' has no effect" in n for n in net.notices)


def test_variable_has_no_batch_axis_by_default():
    # as in RETURNN (add_batch_axis=False): a network of only a variable builds
    net = build_from_dict({"output": {"class": "variable", "shape": [3]}}, EXTERN)
    assert [d.size for d in net.layers["output"].output.dims] == [3]


def test_batch_axis_with_an_input_somewhere():
    net = {"c": {"class": "constant", "value": 1.0, "with_batch_dim": True},
           "output": {"class": "combine", "kind": "add", "from": ["c", "data"]}}
    build_from_dict(net, EXTERN)
    net = {"v": {"class": "variable", "shape": [5], "add_batch_axis": True, "is_output_layer": True},
           "output": {"class": "copy"}}
    build_from_dict(net, EXTERN)  # another layer reads the data: the batch size is known
    build_from_dict({"output": {"class": "constant", "value": 1.0}}, EXTERN)


# --- eval results of an obvious dtype ---------------------------------------------------------------------
@pytest.mark.parametrize("expression,gives", [
    ("source(0) > 0", "bool"), ("tf.equal(source(0), 0.0)", "bool"), ("tf.math.is_nan(source(0))", "bool"),
    ("tf.cast(source(0), 'int32')", "int32"), ("tf.cast(source(0), tf.int64)", "int64"),
    ("tf.cast(source(0), dtype='float16')", "float16"),
])
def test_eval_result_of_the_wrong_dtype(expression, gives):
    error = refused({"output": {"class": "eval", "eval": expression, "from": "data"}}, "layer 'output'",
                    "option 'eval'", f"gives {gives} values", "output dtype is float32",
                    f"'out_type': {{'dtype': '{gives}'}}")
    assert error.option == "eval"


def test_eval_results_that_fit_or_are_not_obvious():
    for expression, out_type in [("source(0) > 0", {"dtype": "bool"}), ("tf.cast(source(0), 'int32')",
                                                                         {"dtype": "int32"}),
                                 ("source(0) * 2", None), ("tf.nn.relu(source(0))", None), ("source(0)", None)]:
        build_from_dict({"output": {"class": "eval", "eval": expression, "from": "data", "out_type": out_type}},
                        EXTERN)
    refused({"output": {"class": "eval", "eval": "source(0)", "from": "data:classes", "out_type":
                        {"dtype": "float32"}}}, "gives int32 values")


# --- layer names ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,phrase", [
    ("data", "how references name extern data"), ("data:x", "how references name extern data"),
    ("a\x00b", "control character"), ("a\nb", "control character"), ("", "is empty"), ("enc/1", "has '/'"),
    ("prev:x", "reference prefix 'prev:'"), ("base:x", "reference prefix 'base:'"),
])
def test_layer_names_that_cannot_work(name, phrase):
    net = {name: {"class": "linear", "n_out": 3, "from": "data", "is_output_layer": True},
           "output": {"class": "copy", "from": "data"}}
    error = refused(net, phrase, "rename" if phrase.startswith(("how", "has", "ref")) else "")
    assert repr(name) in str(error)


def test_huge_integers_anywhere_are_named_before_anything_prints_them():
    # 10**5000 cannot even be printed (Python's 4300-digit limit): every message that shows the value crashed
    net = {"output": {"class": "subnetwork", "from": "data", "subnetwork": {
        "output": {"class": "copy", "from": ["data", 10 ** 5000]}}}}
    error = refused(net, "layer 'output/output'", "option 'from'", "an integer of 16610 bits")
    assert error.option == "from"
    refused({"output": {"class": "copy", "out_type": {10 ** 5000: 1}}}, "option 'out_type'", "16610 bits")
    refused({"output": {"class": "copy"}}, "extern_data 'data': shape/1: the integer", extern={"data": {"shape": (
        None, -2 ** 64)}})


def test_layer_name_in_a_subnetwork_and_non_strings():
    net = {"output": {"class": "subnetwork", "from": "data", "subnetwork": {
        "data:feat": {"class": "copy", "from": "data"}, "output": {"class": "copy", "from": "data"}}}}
    refused(net, "network 'output'", "'data:feat'")
    refused({3: {"class": "copy"}, "output": {"class": "copy", "from": "data"}}, "layer names are strings")


# --- deep nesting: no recursion limit, dumps linear in depth ----------------------------------------------
def nested(depth):
    net = {"output": {"class": "linear", "n_out": 4, "from": "data"}}
    for _ in range(depth):
        net = {"output": {"class": "subnetwork", "from": "data", "subnetwork": net}}
    return net


def test_two_hundred_nested_subnetworks_build_and_dump():
    network = build_from_dict(nested(200), EXTERN)
    # 200 subnetwork layers, each level's "data", the innermost linear
    assert format_text(network).splitlines()[-1] == "402 layers, 16 parameters"
    format_json(network)
    format_dot(network)
    assert nesting_depth(nested(200)) == 201


def test_dot_is_linear_in_nesting_depth():
    # before: 27.6 s at 20 levels (the time doubled per level); now milliseconds at 40
    network = build_from_dict(nested(40), EXTERN)
    start = time.perf_counter()
    format_dot(network)
    format_json(network)
    assert time.perf_counter() - start < 2.0
