"""`LoadedNetwork.forward` takes the lengths of every dynamic axis of an input, in the forms RETURNN users feed
them (one array for the time axis, a list per dynamic axis, a dict by axis), and refuses other forms clearly."""

import numpy as np
import pytest

import netcompiler
from netcompiler.errors import ConfigError

IMG = {"data": {"shape": (None, None, 3)}}
SUM_SPATIAL = {"output": {"class": "reduce", "mode": "sum", "axes": "spatial", "from": "data"}}


@pytest.fixture(scope="module")
def net():
    return netcompiler.load_network(SUM_SPATIAL, extern_data=IMG)


def _image(seed=0):
    x = np.random.RandomState(seed).uniform(-1, 1, (3, 5, 4, 3)).astype(np.float32)
    return x


def _reference(x, heights, widths):
    return np.stack([x[b, :h, :w].sum(axis=(0, 1)) for b, (h, w) in enumerate(zip(heights, widths))])


HEIGHTS, WIDTHS = np.array([5, 2, 3], np.int32), np.array([4, 4, 1], np.int32)


@pytest.mark.parametrize("form", ["list", "dict-by-description", "dict-by-dim", "array-2d"])
def test_lengths_of_both_dynamic_axes_mask_the_padding(net, form):
    x = _image()
    x[1, 2:] = 100.0  # padding of the second image: must not enter
    x[2, :, 1:] = 100.0
    time, other = net.layers["data"].dynamic_dims
    given = {"list": [HEIGHTS, WIDTHS], "array-2d": np.stack([HEIGHTS, WIDTHS]),
             "dict-by-dim": {time: HEIGHTS, other: WIDTHS},
             "dict-by-description": {"T": HEIGHTS, other: WIDTHS}}[form]
    out = net.forward({"data": x}, {"data": given})
    np.testing.assert_allclose(out["output"].value, _reference(x, HEIGHTS, WIDTHS), rtol=1e-5)
    sizes = out["data"].sizes
    assert sizes[time].tolist() == HEIGHTS.tolist() and sizes[other].tolist() == WIDTHS.tolist()


def test_one_array_is_the_time_axis_and_the_other_axis_is_full(net):
    x = _image(1)
    out = net.forward({"data": x}, {"data": HEIGHTS})
    np.testing.assert_allclose(out["output"].value, _reference(x, HEIGHTS, [4, 4, 4]), rtol=1e-5)


@pytest.mark.parametrize("given, words", [
    ([HEIGHTS, WIDTHS, WIDTHS], ["is a list of 3 arrays", "-- give one int array", "a list of 2 such arrays"]),
    (np.zeros((3, 3), np.int32), ["has shape (3, 3)", "-- give one int array", "a list of 2 such arrays"]),
    ({"F": HEIGHTS}, ["not a dynamic axis"]),
    ({"nonsense": HEIGHTS}, ["seq_lens['data'] names axis 'nonsense'"]),
    ([HEIGHTS, np.array([4, 9, 1])], ["expected 3 ints from 0 to 4", "-- e.g. np.full(3, 4)"]),
    ([HEIGHTS[:2], WIDTHS], ["expected 3 ints"]),
])
def test_a_wrong_form_is_a_clear_error(net, given, words):
    with pytest.raises(ConfigError) as info:
        net.forward({"data": _image()}, {"data": given})
    for word in words:
        assert word in str(info.value)


@pytest.mark.parametrize("backend", ["tensorflow", "torch"])
def test_an_axis_beside_a_merged_batch_keeps_each_sequences_lengths(backend):
    # merge_dims of B and T: the widths go along the merged axis, each sequence's repeated for its frames
    pytest.importorskip(backend)
    net = netcompiler.load_network({"m": {"class": "merge_dims", "axes": ["B", "T"], "from": "data"},
                                    "output": {"class": "reduce", "mode": "sum", "axes": "spatial", "from": "m"}},
                                   extern_data=IMG)
    x = _image(2)
    out = net.forward({"data": x}, {"data": [HEIGHTS, WIDTHS]}, backend=backend)
    expected = np.stack([x[b, t, :WIDTHS[b]].sum(axis=0) for b in range(3) for t in range(5)])
    np.testing.assert_allclose(out["output"].value, expected, rtol=1e-5, atol=1e-6)
    (width,) = out["m"].template.dynamic_dims
    assert out["m"].sizes[width].tolist() == np.repeat(WIDTHS, 5).tolist()
