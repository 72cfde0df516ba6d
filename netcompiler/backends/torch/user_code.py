"""The PyTorch backend's names for user code (configs' `eval` strings)."""

from __future__ import annotations

from typing import Any, Dict

import torch


class UserCodeOps:
    """What `eval` strings see: `torch`, the PyTorch module (code written for `tf` does not run here)."""

    @classmethod
    def eval_globals_raw(cls) -> Dict[str, Any]:
        return {"torch": torch}
