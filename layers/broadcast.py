"""How the inputs of elementwise layers meet: their templates broadcast by Dim identity to one output template
(`broadcast_templates`, as RETURNN's `behavior_version` says), and their values aligned to it at emission
(`aligned`, `fold`). Used by the elementwise layers, `attention` and others."""

import functools
from typing import Any, List, Optional, Sequence, Tuple

from netcompiler import frontend as rf
from netcompiler.emit.context import dropout
from netcompiler.errors import DimMismatchError
from netcompiler.layer_base import LayerBase
from netcompiler.tensor import FEATURE, FLOAT_DTYPES, SPATIAL, Data, Dim


def broadcast_templates(layer: LayerBase, inputs: Sequence[Tuple[str, Data]], option: str = "from",
                        outer: bool = True) -> Data:
    """The template all `inputs` (pairs of name, template) broadcast to, as RETURNN's `behavior_version` says.

    The output starts as the input with the most dims (the first of those), keeping its dim order, roles, dtype
    and sparse dim. Axes match by Dim identity, with one exception: feature dims (the feature role) of the same
    static size are the same axis, so that `x + linear(x)` works. A dim another input adds goes where RETURNN
    puts a new axis: a spatial one after the last spatial axis (else after the batch axis), a feature one last
    (and it takes the feature role). Below behavior_version 11, a static size-1 axis (e.g. of `keep_dims`)
    stands for a dim of its kind that its input lacks (it broadcasts). From behavior_version 4 on, one input must
    have every dim of the output (no broadcast in all inputs at once): a DimMismatchError otherwise; with
    `outer` False (switch, as in RETURNN) at any version.
    """
    base_name, base = max(inputs, key=lambda item: len(item[1].dims))
    version = layer.behavior_version
    dims = list(base.dims)
    for name, data in inputs:
        aligned = aligned_dims(data, base)
        missing = [d for d in dims if d not in aligned]
        for dim in aligned:
            if dim in dims:
                continue
            clash = next((d for d in missing if d.kind == dim.kind), None)
            if clash is not None and version < 11 and dim.size == 1 and not dim.is_dynamic:
                continue
            if version >= 4 or not outer:
                why = f"from behavior_version 4 on (this config: {version}), " if outer else ""
                raise layer.error(
                    f"inputs have different dims (option '{option}'): "
                    f"{clash.short_repr() if clash else 'no such dim'} of '{base_name}' "
                    f"{base.describe()} vs {dim.short_repr()} of '{name}' {data.describe()}; {why}one input must "
                    f"have every dim of the output",
                    option=option, kind=DimMismatchError,
                    suggestion="inputs must share their axes (the same Dims); only axes one input lacks are "
                               "broadcast")
            dims.insert(_new_axis(dims, dim), dim)
            if clash is not None:
                layer.network.notices.append(
                    f"layer '{layer.name}': '{name}' {data.describe()} has {dim.short_repr()} where '{base_name}' "
                    f"{base.describe()} has {clash.short_repr()}: both become axes of the output (an outer "
                    f"broadcast, as in RETURNN below behavior_version 4; from 4 on it is an error)")
    out = base.copy(name=layer.name, dims=dims)
    if any(d.kind == FEATURE and not base.has_dim(d) for d in dims):
        out = out.copy(feature_dim=[d for d in dims if d.kind == FEATURE][-1])
    return out


def _new_axis(dims: Sequence[Dim], dim: Dim) -> int:
    """Where RETURNN puts the new axis `dim` among `dims`: batch first, feature last, spatial after the last
    spatial axis (else after the batch axis, else first)."""
    if dim.is_batch:
        return 0
    if dim.kind == FEATURE:
        return len(dims)
    after = [i for i, d in enumerate(dims) if d.kind == SPATIAL] or [i for i, d in enumerate(dims) if d.is_batch]
    return after[-1] + 1 if after else 0


def aligned_dims(data: Data, base: Data) -> List[Dim]:
    """`data`'s dims, its feature dim replaced by `base`'s when both are different feature-kind Dims of the
    same static size (the axis of one can stand for the other)."""
    mine, theirs = data.feature_dim, base.feature_dim
    if mine is None or theirs is None or mine == theirs or data.has_dim(theirs) or base.has_dim(mine):
        return list(data.dims)
    if mine.kind != FEATURE or theirs.kind != FEATURE or mine.size is None or mine.size != theirs.size:
        return list(data.dims)
    return [theirs if d == mine else d for d in data.dims]


def common_sparse_dim(datas: Sequence[Data]) -> Optional[Dim]:
    """The sparse dim all `datas` share, else None."""
    sparse = {d.sparse_dim for d in datas}
    return sparse.pop() if len(sparse) == 1 else None


def check_same_dtype(layer: LayerBase, inputs: Sequence[Tuple[str, Data]], option: str = "from") -> str:
    """The dtype all inputs have; a DimMismatchError naming two that differ."""
    first_name, first = inputs[0]
    for name, data in inputs[1:]:
        if data.dtype != first.dtype:
            raise layer.error(f"inputs have different dtypes: '{first_name}' {first.describe()} {first.dtype} vs "
                              f"'{name}' {data.describe()} {data.dtype}", option=option, kind=DimMismatchError,
                              suggestion="add a 'cast' layer")
    return first.dtype


def source_inputs(layer: LayerBase) -> List[Tuple[str, Data]]:
    if not layer.sources:
        raise layer.error("this layer needs at least one input in 'from'", option="from",
                          suggestion="e.g. 'from': 'data'")
    return [(src.name, src.output) for src in layer.sources]


# --- the values at emission -----------------------------------------------------------------------------------
def source_value(inputs, layer: LayerBase, src: LayerBase) -> rf.Tensor:
    """The output of `src` as `layer` reads it: with `layer`'s dropout applied (float inputs only)."""
    x = inputs.value(src)
    return dropout(layer, x) if src.output.dtype in FLOAT_DTYPES else x


def aligned(x: rf.Tensor, out: Data) -> rf.Tensor:
    """`x` with its feature dim replaced by `out`'s where `aligned_dims` takes them for the same axis, and without
    its size-1 axes that `out` lacks (those broadcast, see `broadcast_templates`)."""
    for mine, theirs in zip(x.dims, aligned_dims(x.data, out)):
        if mine != theirs:
            x = rf.replace_dim(x, in_dim=mine, out_dim=theirs)
    broadcast = [d for d in x.dims if not out.has_dim(d) and d.size == 1 and not d.is_dynamic]
    return rf.squeeze(x, axis=broadcast) if broadcast else x


def aligned_sources(inputs, layer: LayerBase, out: Data) -> List[rf.Tensor]:
    """Every source of `layer` (dropout applied), its feature dim aligned with `out`'s (see `aligned`)."""
    return [aligned(source_value(inputs, layer, src), out) for src in layer.sources]


def in_order_of(out: Data, *values) -> Tuple[Dim, ...]:
    """The dims of `out` that one of the Tensors among `values` has, in `out`'s order: the dim order of an
    elementwise result that needs no transpose to become the output."""
    tensors = [v for v in values if isinstance(v, rf.Tensor)]
    return tuple(d for d in out.dims if any(t.has_dim(d) for t in tensors))


def fold(out: Data, kind: str, values: Sequence[Any]) -> rf.Tensor:
    """`values` folded left with the op-layer combine `kind`, each step laid out in `out`'s dim order."""
    return functools.reduce(lambda a, b: rf.combine(a, kind, b, dim_order=in_order_of(out, a, b)), values)
