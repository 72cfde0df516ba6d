import os
import sys

# tests import the harness and the case modules by plain name
sys.path.insert(0, os.path.dirname(__file__))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
