"""Axis descriptions and extern data templates as RETURNN reads them (issue 9; corpus causes
extern-feature-before-time, extern-no-feature-dim, static-data-has-no-time-axis, axis-description-spelling,
dim-tag-names)."""

import pytest

from netcompiler.errors import AxisError, InvalidOptionError
from netcompiler.extern_data import data_from_options
from netcompiler.tensor.axes import resolve_axes, resolve_axis


def roles(data):
    return data.batch_dim_axis, data.time_dim_axis, data.feature_dim_axis


def test_feature_axis_before_time_is_the_static_one():
    data = data_from_options("data", {"dim": 5, "shape": (5, None)})
    assert data.batch_shape == (None, 5, None)
    assert roles(data) == (0, 2, 1)
    assert data.dim == 5


def test_feature_axis_is_the_last_static_axis():
    data = data_from_options("data", {"dim": 3, "shape": (None, 4, 3)})
    assert roles(data) == (0, 1, 3)


def test_dim_none_is_a_dynamic_feature_axis():
    data = data_from_options("data", {"dim": None, "shape": (None, None)})
    assert data.batch_shape == (None, None, None)
    assert roles(data) == (0, 1, 2)
    assert data.dim is None


def test_int_sequence_has_no_feature_axis():
    data = data_from_options("data", {"shape": (None,), "dtype": "int32"})
    assert roles(data) == (0, 1, None)
    assert not data.sparse


def test_dim_that_no_static_axis_has_is_refused():
    with pytest.raises(InvalidOptionError, match="'dim' is 4"):
        data_from_options("data", {"dim": 4, "shape": (5, None)})


def test_static_data_has_no_time_axis_and_T_says_what_to_use():
    data = data_from_options("data", {"shape": (4, 5)})
    assert roles(data) == (0, None, 2)
    with pytest.raises(AxisError, match="no time axis.*'spatial:0'"):
        resolve_axis(data, "T", layer="out", option="axis")
    assert resolve_axes(data, "T?") == []
    assert resolve_axis(data, "spatial:0") == 1


def test_static_and_dynamic_name_every_such_axis():
    data = data_from_options("data", {"shape": (None, 4, 3)})
    assert resolve_axes(data, "static") == [2, 3]
    assert resolve_axes(data, "dynamic") == [1]
    static = data_from_options("data", {"shape": (4, 5)})
    assert resolve_axes(static, "static") == [1, 2]


def test_s_i_is_the_ith_spatial_axis():
    data = data_from_options("data", {"shape": (None, None, 3)})
    assert resolve_axis(data, "s:0") == 1
    assert resolve_axis(data, "s:1") == 2
    assert resolve_axes(data, ["s:1", "F"]) == [2, 3]
    with pytest.raises(AxisError, match="2 spatial axes, so index 2"):
        resolve_axis(data, "s:2")


@pytest.mark.parametrize("name", ["stag:extern_data:data", "stag:time:var:extern_data:data", "stag:time:data"])
def test_returnn_names_of_the_extern_time_dim(name):
    data = data_from_options("data", {"dim": 5})
    assert resolve_axis(data, name) == 1


def test_returnn_name_of_the_extern_feature_dim():
    data = data_from_options("data", {"dim": 5})
    assert resolve_axis(data, "stag:feature:data") == 2


def test_unknown_tag_name_is_still_refused():
    data = data_from_options("data", {"dim": 5})
    with pytest.raises(AxisError, match="no dim is named 'extern_data:other'"):
        resolve_axis(data, "stag:extern_data:other")
