"""Config loading: overrides, notices about settings, where a top-level setting is written."""

import pytest

from netcompiler.config import load_config, parse_overrides
from netcompiler.errors import ConfigError

CONFIG = '''\
import os
num_epoch = 3
learning_rate = 0.01
use_tensorflow = True
helper_table = {"a": 1}
extern_data = {"data": {"dim": 3}}
network = {"output": {"class": "copy", "is_output_layer": True}}
'''


@pytest.fixture
def config_path(tmp_path):
    path = tmp_path / "c.py"
    path.write_text(CONFIG)
    return str(path)


def test_misspelled_setting_gets_a_notice_and_helpers_do_not(config_path):
    notices = load_config(config_path).notices
    assert any("'num_epoch'" in n and "did you mean 'num_epochs'?" in n for n in notices)
    assert any("'use_tensorflow' has no effect in netcompiler" in n for n in notices)
    assert not any("helper_table" in n or "'os'" in n for n in notices)


def test_num_outputs_beside_extern_data_gets_a_notice(tmp_path):
    path = tmp_path / "c.py"
    path.write_text(CONFIG + "num_outputs = 'ten'\nnum_inputs = 4\n")
    notices = load_config(str(path)).notices
    for key in ("num_outputs", "num_inputs"):
        assert any(f"'{key}' has no effect: extern_data defines" in n for n in notices), notices
    path.write_text(CONFIG.replace('extern_data = {"data": {"dim": 3}}', "num_inputs = 3"))
    assert not any("extern_data defines" in n for n in load_config(str(path)).notices)
    path.write_text(CONFIG + "num_inputs = 3\n")  # the usual helper variable, the same dim as extern_data's
    assert not any("extern_data defines" in n for n in load_config(str(path)).notices)


def test_overrides_are_literals_else_strings_and_are_located_on_the_command_line(config_path):
    config = load_config(config_path, ["++learning_rate", "0.001", "++learning_rate_control", "newbob"])
    assert config.get("learning_rate") == 0.001
    assert config.get("learning_rate_control") == "newbob"
    assert str(config.key_location("learning_rate")) == "command line ++learning_rate"
    assert str(config.key_location("num_epoch")).endswith("c.py:2")


@pytest.mark.parametrize("args", [["learning_rate", "1"], ["++learning_rate"]])
def test_malformed_overrides_are_config_errors(args):
    with pytest.raises(ConfigError, match="command line"):
        parse_overrides(args)
