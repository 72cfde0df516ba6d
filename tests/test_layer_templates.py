"""Runs every layer family's template cases and error cases (see layer_harness.py)."""

import pytest

from layer_harness import all_cases, all_error_cases, layer_classes_in, template_of
from netcompiler.builtin import is_builtin_module
from netcompiler.layer_base import registered_layer_classes

CASES = all_cases()
ERROR_CASES = all_error_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_template(case):
    network = case.build()
    layers = {layer.name: layer for layer in network.all_layers()}
    for name, expected in case.expect.items():
        assert name in layers, f"layer {name!r} was not built; built: {sorted(layers)}"
        assert template_of(layers[name]) == expected
    for name, params in case.params.items():
        assert {k: v.sizes for k, v in layers[name].params.items()} == params


@pytest.mark.parametrize("case", ERROR_CASES, ids=[c.id for c in ERROR_CASES])
def test_config_error(case):
    from netcompiler.network import build_from_dict

    with pytest.raises(case.error) as info:
        build_from_dict(case.network, case.extern_data)
    message = str(info.value)
    for words in case.contains:
        assert words in message


def test_every_registered_layer_has_template_cases():
    covered = set()
    for case in CASES:
        covered |= layer_classes_in(case.network)
    builtin = {name for name, cls in registered_layer_classes().items() if is_builtin_module(cls.__module__)}
    missing = sorted(builtin - covered)  # classes that configs of other tests define do not count
    assert not missing, f"layer classes without template cases: {missing}"
