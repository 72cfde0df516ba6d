"""The shared layer-test harness.

Every layer family has a module in `tests/layer_cases/` with a list `CASES` of
`LayerCase`s (a small network and the exact templates it must produce) and a
list `ERROR_CASES` of `ErrorCase`s (a broken network and the error it must
give). `test_layer_templates.py` runs them all and checks that every
registered layer class appears in at least one case.
"""

from __future__ import annotations

import contextlib
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
    # run the numerical test as a training pass (dropout, batch statistics)
    training: bool = False
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


# --- emission -------------------------------------------------------------------------------------------
BATCH_LENGTHS = (5, 3, 1)
"""Ragged sequence lengths of the test batch: the longest first, one sequence of a single frame."""
PADDING_VALUE = 50.0
"""What padded frames of float inputs hold, so that a leak into valid frames shows."""


def random_batch(network, seed: int = 0, full: bool = False):
    """Random inputs for every extern data key the network reads, laid out as its template, with ragged
    lengths (BATCH_LENGTHS, rotated per dynamic dim) and garbage in the padded frames; with `full`, every
    sequence of a dynamic dim has that dim's longest length (no padding)."""
    import numpy as np

    rng = np.random.RandomState(seed)
    inputs, lengths = {}, {}
    dim_lengths = {}
    for layer in network.layers.values():
        if layer.layer_class != "source":
            continue
        key = layer.opts["data_key"]
        data = network.extern_data[key]
        shape = []
        for dim in data.dims:
            if dim.is_batch:
                shape.append(len(BATCH_LENGTHS))
            elif dim.is_dynamic:
                if dim not in dim_lengths:
                    shift = len(dim_lengths)
                    dim_lengths[dim] = np.roll(np.array(BATCH_LENGTHS, dtype=np.int32), shift) + shift
                    if full:
                        dim_lengths[dim] = np.full_like(dim_lengths[dim], dim_lengths[dim].max())
                shape.append(int(dim_lengths[dim].max()))
            else:
                shape.append(dim.size)
        if data.sparse:
            values = rng.randint(0, data.sparse_dim.size, size=shape).astype(data.dtype)
        elif data.dtype == "bool":
            values = rng.rand(*shape) > 0.5
        elif data.dtype.startswith("int"):
            values = rng.randint(-3, 4, size=shape).astype(data.dtype)
        else:
            values = rng.randn(*shape).astype(data.dtype)
            for dim in data.dynamic_dims:
                valid = valid_mask(data, dim, dim_lengths[dim], shape)
                values = np.where(valid, values, np.asarray(PADDING_VALUE, dtype=data.dtype))
        inputs[key] = values
        if data.time_dim is not None and data.time_dim.is_dynamic:
            lengths[key] = dim_lengths[data.time_dim]
    return inputs, lengths


def valid_mask(data, dim, sizes, shape):
    """NumPy bool mask (broadcastable to `shape`, laid out as `data`): True on the valid frames of `dim`."""
    import numpy as np

    axis = data.axis_of(dim)
    batch_axis = data.batch_dim_axis
    positions = np.arange(shape[axis])
    mask_shape = [1] * len(shape)
    mask_shape[axis] = shape[axis]
    if batch_axis is None:
        return (positions < int(np.max(sizes))).reshape(mask_shape)
    mask_shape[batch_axis] = shape[batch_axis]
    pos = positions.reshape([-1 if a == axis else 1 for a in range(len(shape))])
    lens = np.asarray(sizes).reshape([-1 if a == batch_axis else 1 for a in range(len(shape))])
    return pos < lens


def params_as_numpy(model):
    return {name: var.numpy() for name, var in model.params.items()}


# --- the op layer -----------------------------------------------------------------------------------------
@contextlib.contextmanager
def run_context(lengths, backend: str = "tensorflow"):
    """An active run context of `backend` with batch size len(lengths) and a dynamic time dim (`ctx.time`) of
    these lengths, for tests of op-layer functions."""
    import numpy as np

    from netcompiler import frontend as rf
    from netcompiler.backends import get_backend
    from netcompiler.tensor import SpatialDim, batch_dim

    ctx = rf.RunContext(get_backend(backend))
    time = SpatialDim("time")
    with ctx:
        ctx.set_size(batch_dim, len(lengths), size_dims=())
        ctx.set_size(time, np.asarray(lengths, np.int32))
        ctx.time = time
        yield ctx


def run_on_each_backend(lengths):
    """A pytest fixture (assign it to `run` in a test module): `run_context(lengths)` on TensorFlow and on PyTorch
    (skipped where PyTorch, an optional extra, is not installed)."""
    import pytest

    @pytest.fixture(params=["tensorflow", "torch"])
    def run(request):
        if request.param == "torch":
            pytest.importorskip("torch", reason="PyTorch is an optional extra (pip install -e '.[torch]')")
        with run_context(lengths, backend=request.param) as ctx:
            yield ctx

    return run
