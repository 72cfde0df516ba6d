"""The shared layer-test harness.

Every layer family has a module in `tests/layer_cases/` with a list `CASES` of
`LayerCase`s (a small network and the exact templates it must produce) and a
list `ERROR_CASES` of `ErrorCase`s (a broken network and the error it must
give). `test_layer_templates.py` runs them all and checks that every
registered layer class appears in at least one case.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

from netcompiler.network import build_from_dict

DEFAULT_EXTERN = {"data": {"dim": 6}, "classes": {"dim": 4, "sparse": True}}


@dataclass
class LayerCase:
    """A network and the templates its layers must have.

    `expect` maps layer names to `"<describe()> <dtype>"`, e.g.
    `"[B, T|'time:data', F|'lin:feature'(5)] float32"`; `params` maps layer
    names to {param name: sizes}. `reference` (used by the emission tests)
    computes the expected values of the layers in `expect` with NumPy.
    """

    id: str
    network: Dict[str, Any]
    expect: Dict[str, str]
    extern_data: Dict[str, Any] = field(default_factory=lambda: dict(DEFAULT_EXTERN))
    params: Dict[str, Dict[str, Tuple[int, ...]]] = field(default_factory=dict)
    reference: Optional[Callable[..., Dict[str, Any]]] = None
    # per-case tolerance of the numerical test
    rtol: float = 1e-5
    atol: float = 1e-5

    def build(self):
        return build_from_dict(self.network, self.extern_data)


@dataclass
class ErrorCase:
    """A broken network, the error class it must raise and words its message must contain."""

    id: str
    network: Dict[str, Any]
    error: type
    contains: List[str]
    extern_data: Dict[str, Any] = field(default_factory=lambda: dict(DEFAULT_EXTERN))


def _case_modules():
    import layer_cases

    for info in sorted(pkgutil.iter_modules(layer_cases.__path__), key=lambda i: i.name):
        yield importlib.import_module(f"layer_cases.{info.name}")


def all_cases() -> List[LayerCase]:
    return [case for module in _case_modules() for case in getattr(module, "CASES", [])]


def all_error_cases() -> List[ErrorCase]:
    return [case for module in _case_modules() for case in getattr(module, "ERROR_CASES", [])]


def layer_classes_in(net_dict: Dict[str, Any]) -> set:
    """Every layer class a network dict uses, nested networks included."""
    found = set()
    for d in net_dict.values():
        if isinstance(d, dict):
            if isinstance(d.get("class"), str):
                found.add(d["class"])
            for nested in ("subnetwork", "unit"):
                if isinstance(d.get(nested), dict):
                    found |= layer_classes_in(d[nested])
    return found


def template_of(layer) -> str:
    return f"{layer.output.describe()} {layer.output.dtype}"
