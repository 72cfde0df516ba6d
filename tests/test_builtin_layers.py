"""The registries and the explicit loading of the built-in layer catalogue (`netcompiler.builtin`)."""

import os
import subprocess
import sys
import textwrap

import pytest

import netcompiler
from netcompiler.builtin import CATALOGUE_DIR, is_builtin_module, load_builtin_layers
from netcompiler.cli import dump_net_main
from netcompiler.errors import InvalidOptionError, UnknownLayerClassError
from netcompiler.layer_base import LayerBase, get_layer_class, registered_layer_classes
from netcompiler.loss_base import LOSS_CLASSES, loss_classes
from netcompiler.registry import Registry

REPO = os.path.dirname(os.path.dirname(os.path.abspath(netcompiler.__file__)))

CUSTOM_CLASS_CONFIG = '''
from netcompiler.layer_base import LayerBase
extern_data = {"data": {"dim": 9}}

class MyLayer(LayerBase):
    """A config's own layer class: its output is its input."""
    layer_class = "mylayer"

network = {"lin": {"class": "linear", "n_out": 3, "from": "data"},
           "output": {"class": "mylayer", "from": "lin"}}
'''

PLAIN_CONFIG = '''
extern_data = {"data": {"dim": 9}}
network = {"output": {"class": "linear", "n_out": 4, "from": "data"}}
'''


def run_python(args, cwd):
    """Runs Python in a fresh process (nothing registered yet) in folder `cwd`."""
    env = dict(os.environ, PYTHONPATH=REPO)
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_loading_is_idempotent_and_fills_both_registries():
    module = load_builtin_layers()
    assert load_builtin_layers() is module
    assert os.path.samefile(os.path.dirname(module.__file__), CATALOGUE_DIR)
    classes = registered_layer_classes()
    assert {"linear", "subnetwork", "rec", "source"} <= set(classes)
    assert is_builtin_module(classes["linear"].__module__)
    assert {"ce", "mse"} <= set(loss_classes())


def test_a_config_layer_class_adds_to_the_builtin_ones_in_process(tmp_path, capsys):
    path = tmp_path / "custom.py"
    path.write_text(CUSTOM_CLASS_CONFIG)
    for _ in range(2):  # running the same config again redefines its class: that must not clash
        assert dump_net_main([str(path)]) == 0
        out = capsys.readouterr().out
        assert "lin     linear" in out and "output  mylayer" in out, out
    assert not is_builtin_module(registered_layer_classes()["mylayer"].__module__)


def test_a_config_layer_class_adds_to_the_builtin_ones_in_a_fresh_process(tmp_path):
    (tmp_path / "custom.py").write_text(CUSTOM_CLASS_CONFIG)
    result = run_python(["-m", "netcompiler.cli", "custom.py"], tmp_path)
    assert result.returncode == 0, result.stderr
    assert "lin     linear" in result.stdout and "output  mylayer" in result.stdout


def test_a_users_layers_module_in_the_working_folder_is_not_the_catalogue(tmp_path):
    (tmp_path / "layers.py").write_text('raise RuntimeError("the user\'s layers.py was imported")\n')
    (tmp_path / "plain.py").write_text(PLAIN_CONFIG)
    result = run_python(["-m", "netcompiler.cli", "plain.py"], tmp_path)
    assert result.returncode == 0, result.stderr
    assert "output  linear" in result.stdout


def test_a_config_may_import_its_own_layers_module(tmp_path):
    (tmp_path / "layers.py").write_text("HIDDEN = 7\n")
    (tmp_path / "mine.py").write_text("from layers import HIDDEN\n" + PLAIN_CONFIG.replace("4", "HIDDEN"))
    result = run_python(["-m", "netcompiler.cli", "mine.py"], tmp_path)
    assert result.returncode == 0, result.stderr
    assert "'output:feature'(7)" in result.stdout


def test_building_without_the_catalogue_says_how_to_load_it(tmp_path):
    code = textwrap.dedent('''
        from netcompiler.errors import UnknownLayerClassError
        from netcompiler.network import build_from_dict
        try:
            build_from_dict({"output": {"class": "linear", "n_out": 2}}, {"data": {"dim": 3}})
        except UnknownLayerClassError as exc:
            print(exc)
    ''')
    result = run_python(["-c", code], tmp_path)
    assert result.returncode == 0, result.stderr
    assert "unknown layer class 'linear'" in result.stdout
    assert "call netcompiler.builtin.load_builtin_layers()" in result.stdout


def test_registry_get_register_names():
    registry = Registry("widget", "widgets", "kind")

    class A:
        pass

    class B:
        pass

    registry.register("alpha", A)
    registry.register("alpha", A)  # the same class again changes nothing
    assert registry.get("alpha") is A
    assert registry.names() == ["alpha"]
    with pytest.raises(TypeError, match="widget 'alpha' registered twice"):
        registry.register("alpha", B)
    with pytest.raises(UnknownLayerClassError) as info:
        registry.get("alpah", layer="out")
    assert str(info.value) == "layer 'out': option 'kind': unknown widget 'alpah' -- did you mean 'alpha'?"
    assert info.value.option == "kind"


def test_unknown_names_without_a_close_match_list_the_builtin_ones():
    with pytest.raises(UnknownLayerClassError) as info:
        get_layer_class("zzzzzz", "out")
    assert "layer classes: " in str(info.value) and "linear" in str(info.value)


def test_a_second_class_under_a_builtin_name_is_refused():
    with pytest.raises(TypeError, match="layer class 'linear' registered twice"):
        type("Linear2", (LayerBase,), {"layer_class": "linear"})


def test_an_unknown_loss_is_an_invalid_option():
    with pytest.raises(InvalidOptionError, match="unknown loss 'mse2' -- did you mean 'mse'"):
        LOSS_CLASSES.get("mse2", "out")
