"""The TensorFlow backend's names for user code written for TensorFlow (RETURNN configs' `eval` strings)."""

from __future__ import annotations

from typing import Any, Dict

import tensorflow as tf


class UserCodeOps:
    """What `eval` strings of configs see: `tf`, the TensorFlow module."""

    @classmethod
    def eval_globals_raw(cls) -> Dict[str, Any]:
        return {"tf": tf}
