import os
import sys

# tests import the harness and the case modules by plain name
sys.path.insert(0, os.path.dirname(__file__))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from netcompiler.builtin import load_builtin_layers  # noqa: E402

# the layer classes the tests build with; the core never imports the catalogue itself
load_builtin_layers()
