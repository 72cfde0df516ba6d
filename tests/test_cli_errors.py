"""`dump-net` on broken configs: one line `error: ...` on stderr naming the layer, the option and the place,
exit status 2, no traceback (unless --debug)."""

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from netcompiler.cli import dump_net_main
from netcompiler.errors import (
    AxisError, ConfigError, ConfigFileError, CycleError, DimMismatchError, UnknownLayerClassError,
    UnknownOptionError, UnknownReferenceError,
)

HEADER = 'extern_data = {"data": {"dim": 9}, "classes": {"dim": 2, "sparse": True}}\n'


def write_config(tmp_path, body, name="broken.py"):
    """Writes HEADER + body to a config file; returns its path."""
    path = tmp_path / name
    path.write_text(HEADER + textwrap.dedent(body).lstrip("\n"), encoding="utf-8")
    return str(path)


def line_of(path, needle):
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if needle in line:
                return number
    raise AssertionError(f"{needle!r} not in {path}")


def dump_in_process(capsys, path, *flags):
    capsys.readouterr()
    status = dump_net_main([path, *flags])
    out, err = capsys.readouterr()
    return status, out, err


def the_error_line(status, err):
    """The single `error: ...` line; checks the exit status and that there is no traceback."""
    assert status == 2, err
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ")
    return lines[0]


def error_line(capsys, path, *flags):
    """Runs dump-net in process on a broken config; returns its one error line (nothing on stdout)."""
    status, out, err = dump_in_process(capsys, path, *flags)
    assert out == ""
    return the_error_line(status, err)


def dump_net_command():
    exe = shutil.which("dump-net")
    return [exe] if exe else [sys.executable, "-c", "import sys; from netcompiler.cli import dump_net_main; "
                                                    "sys.exit(dump_net_main())"]


def dump_subprocess(path, *flags):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    return subprocess.run(dump_net_command() + [path, *flags], capture_output=True, text=True, timeout=120, env=env)


# --- the configs -------------------------------------------------------------------------------------
MISSPELLED_OPTION = '''
network = {
    "out": {"class": "linear", "n_ot": 5, "from": "data"},
    "output": {"class": "softmax", "n_out": 2, "loss": "ce", "from": "out"},
}
'''

MISSPELLED_REFERENCE = '''
network = {
    "enc0": {"class": "linear", "n_out": 8, "activation": "tanh", "from": "data"},
    "enc1": {"class": "linear", "n_out": 8, "activation": "tanh", "from": "ecn0"},
    "output": {"class": "softmax", "n_out": 2, "loss": "ce", "from": "enc1"},
}
'''

CYCLE = '''
network = {
    "a": {"class": "linear", "n_out": 4, "from": "c"},
    "b": {"class": "linear", "n_out": 4, "from": "a"},
    "c": {"class": "linear", "n_out": 4, "from": ["b", "data"]},
    "output": {"class": "softmax", "n_out": 2, "loss": "ce", "from": "c"},
}
'''

UNKNOWN_CLASS = '''
network = {
    "hidden": {"class": "lienar", "n_out": 4, "from": "data"},
    "output": {"class": "softmax", "n_out": 2, "loss": "ce", "from": "hidden"},
}
'''

INCOMPATIBLE_DIMS = '''
behavior_version = 12
network = {
    "from_features": {"class": "linear", "n_out": 4, "from": "data"},
    "from_labels": {"class": "linear", "n_out": 4, "from": "data:classes"},
    "sum": {"class": "combine", "kind": "add", "from": ["from_features", "from_labels"]},
    "output": {"class": "softmax", "n_out": 2, "loss": "ce", "from": "sum"},
}
'''

AXIS_NOT_APPLYING = '''
network = {
    "merged": {"class": "merge_dims", "axes": "stag:mel", "from": "data"},
    "output": {"class": "softmax", "n_out": 2, "loss": "ce", "from": "merged"},
}
'''

SYNTAX_ERROR = '''
network = {
    "output": {"class": "softmax", "n_out": 2, "loss": "ce" "from": "data"},
}
'''

RAISING = '''
_hidden_sizes = [512, 512]
_dropout = 0.1 / (len(_hidden_sizes) - 2)
network = {
    "output": {"class": "softmax", "n_out": 2, "loss": "ce", "from": "data"},
}
'''

MISSING_NETWORK = '''
learning_rate = 0.01
netwrok = {
    "output": {"class": "softmax", "n_out": 2, "loss": "ce", "from": "data"},
}
'''


# --- in process ------------------------------------------------------------------------------------------
def test_misspelled_option(tmp_path, capsys):
    path = write_config(tmp_path, MISSPELLED_OPTION)
    line = error_line(capsys, path)
    entry = line_of(path, '"out": {')
    assert line == (f"error: {path}:{entry}: layer 'out': option 'n_ot' unknown for class 'linear' "
                    f"-- did you mean 'n_out'?")


def test_a_top_level_setting_found_wrong_while_building_names_its_line(tmp_path, capsys):
    path = tmp_path / "outputs.py"
    path.write_text('num_inputs = 3\nnum_outputs = {"classes": "x"}\nnetwork = {"output": {"class": "softmax", '
                    '"loss": "ce", "from": "data", "target": "classes"}}\n', encoding="utf-8")
    line = error_line(capsys, str(path))
    assert line.startswith(f"error: {path}:2: config key 'num_outputs': num_outputs['classes'] must be "), line
    assert line.endswith("-- e.g. num_outputs = {'classes': [10, 1]} (ndim 1: sparse labels)"), line


def test_misspelled_reference(tmp_path, capsys):
    path = write_config(tmp_path, MISSPELLED_REFERENCE)
    line = error_line(capsys, path)
    entry = line_of(path, '"enc1": {')
    assert line == (f"error: {path}:{entry}: layer 'enc1': 'from' refers to 'ecn0', which is not in the network "
                    f"-- did you mean 'enc0'?")


def test_cycle_names_its_path(tmp_path, capsys):
    path = write_config(tmp_path, CYCLE)
    line = error_line(capsys, path)
    assert "cycle" in line
    assert f"{path}:" in line
    cycle = line.split("cycle: ", 1)[1].split(" -- ")[0].split(" -> ")
    assert cycle[0] == cycle[-1]
    assert sorted(cycle[:-1]) == ["a", "b", "c"]
    # the path follows "from": each layer in it is read by the next one
    readers = {"c": "a", "a": "b", "b": "c"}  # layer -> the layer that reads it
    reads = {"a": "c", "b": "a", "c": "b"}  # layer -> the layer it reads
    assert all(readers[x] == y for x, y in zip(cycle, cycle[1:])) or \
        all(reads[x] == y for x, y in zip(cycle, cycle[1:]))


def test_unknown_class(tmp_path, capsys):
    path = write_config(tmp_path, UNKNOWN_CLASS)
    line = error_line(capsys, path)
    entry = line_of(path, '"hidden": {')
    assert line.startswith(f"error: {path}:{entry}: layer 'hidden': ")
    assert "unknown layer class 'lienar'" in line
    assert line.endswith("-- did you mean 'linear'?")


def test_incompatible_dims_show_both_templates(tmp_path, capsys):
    path = write_config(tmp_path, INCOMPATIBLE_DIMS)
    line = error_line(capsys, path)
    entry = line_of(path, '"sum": {')
    assert line.startswith(f"error: {path}:{entry}: layer 'sum': ")
    assert "inputs have different dims" in line
    assert "'from_features' [B, T|'time:data', F|'from_features:feature'(4)]" in line
    assert "'from_labels' [B, T|'time:classes', F|'from_labels:feature'(4)]" in line


def test_axis_not_applying_names_the_input_dims(tmp_path, capsys):
    path = write_config(tmp_path, AXIS_NOT_APPLYING)
    line = error_line(capsys, path)
    entry = line_of(path, '"merged": {')
    assert line.startswith(f"error: {path}:{entry}: layer 'merged': ")
    assert "'axes'" in line and "'stag:mel'" in line
    assert "[B, T|'time:data', F|'data:feature'(9)]" in line


def test_syntax_error_names_the_line(tmp_path, capsys):
    path = write_config(tmp_path, SYNTAX_ERROR)
    line = error_line(capsys, path)
    assert line.startswith(f"error: {path}:{line_of(path, 'softmax')}: syntax error")


def test_config_raising_names_the_line_and_exception(tmp_path, capsys):
    path = write_config(tmp_path, RAISING)
    line = error_line(capsys, path)
    assert line.startswith(f"error: {path}:{line_of(path, '_dropout =')}: ")
    assert "ZeroDivisionError" in line


def test_missing_network(tmp_path, capsys):
    path = write_config(tmp_path, MISSING_NETWORK)
    line = error_line(capsys, path)
    assert path in line
    assert "'network'" in line


def test_missing_config_file(tmp_path, capsys):
    path = str(tmp_path / "no-such-config.py")
    line = error_line(capsys, path)
    assert "no-such-config.py" in line and "does not exist" in line


@pytest.mark.parametrize("body, error", [
    (MISSPELLED_OPTION, UnknownOptionError),
    (MISSPELLED_REFERENCE, UnknownReferenceError),
    (CYCLE, CycleError),
    (UNKNOWN_CLASS, UnknownLayerClassError),
    (INCOMPATIBLE_DIMS, DimMismatchError),
    (AXIS_NOT_APPLYING, AxisError),
    (SYNTAX_ERROR, ConfigFileError),
    (RAISING, ConfigFileError),
    (MISSING_NETWORK, ConfigFileError),
], ids=["option", "reference", "cycle", "class", "dims", "axis", "syntax", "raising", "no-network"])
def test_debug_raises_the_error_itself(tmp_path, capsys, body, error):
    path = write_config(tmp_path, body)
    with pytest.raises(error) as info:
        dump_net_main([path, "--debug"])
    assert isinstance(info.value, ConfigError)
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("flag", ["--json", "--dot"])
def test_output_format_does_not_change_errors(tmp_path, capsys, flag):
    path = write_config(tmp_path, MISSPELLED_OPTION)
    status, out, err = dump_in_process(capsys, path, flag)
    assert out == ""
    assert "did you mean 'n_out'?" in the_error_line(status, err)


# --- as a subprocess (the installed console script) ----------------------------------------------------
def test_subprocess_misspelled_option(tmp_path):
    path = write_config(tmp_path, MISSPELLED_OPTION)
    result = dump_subprocess(path)
    assert result.stdout == ""
    line = the_error_line(result.returncode, result.stderr)
    entry = line_of(path, '"out": {')
    assert line == (f"error: {path}:{entry}: layer 'out': option 'n_ot' unknown for class 'linear' "
                    f"-- did you mean 'n_out'?")


def test_subprocess_cycle(tmp_path):
    path = write_config(tmp_path, CYCLE)
    result = dump_subprocess(path)
    line = the_error_line(result.returncode, result.stderr)
    assert "cycle" in line and " -> " in line


def test_subprocess_syntax_error(tmp_path):
    path = write_config(tmp_path, SYNTAX_ERROR)
    result = dump_subprocess(path)
    line = the_error_line(result.returncode, result.stderr)
    assert f"{path}:{line_of(path, 'softmax')}: syntax error" in line


def test_subprocess_debug_shows_a_traceback(tmp_path):
    path = write_config(tmp_path, MISSPELLED_REFERENCE)
    result = dump_subprocess(path, "--debug")
    assert result.returncode != 0
    assert "Traceback" in result.stderr
    assert "UnknownReferenceError" in result.stderr
    assert "did you mean 'enc0'?" in result.stderr


def test_the_option_is_named_once_whatever_the_message_says():
    named = ConfigError("the softmax axis must be spatial", layer="att", option="axis", suggestion="use F")
    assert str(named) == "layer 'att': option 'axis': the softmax axis must be spatial -- use F"
    quoted = ConfigError("option 'dropout' must be a rate in [0, 1), not 1.5", layer="out", option="dropout")
    assert str(quoted) == "layer 'out': option 'dropout' must be a rate in [0, 1), not 1.5"
    keyed = ConfigError("must be an int", subject="config key 'num_outputs'", option="num_outputs")
    assert str(keyed) == "config key 'num_outputs': must be an int"
    assert str(ConfigError("no option here", layer="x")) == "layer 'x': no option here"


def test_a_layer_error_whose_text_does_not_say_the_option_still_names_it(tmp_path, capsys):
    path = write_config(tmp_path, """
        network = {"output": {"class": "softmax_over_spatial", "axis": "F", "from": "data"}}
    """)
    line = error_line(capsys, path)
    assert line.startswith(f"error: {path}:{line_of(path, 'softmax_over_spatial')}: layer 'output': option 'axis': "
                           f"the softmax axis must be spatial"), line
