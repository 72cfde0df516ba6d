"""Ops that make, reorder and reshape Tensors, addressed by Dim: constants, `permute`, `merge_dims`,
`split_dims`, `concat`, `pad`, `slice`, `gather`, `range_over_dim`, `sequence_mask`, ..."""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple, Union

from ..tensor import SPATIAL, Data, Dim, Tensor, merge_dims as merged_dim
from ._dispatch import backend_for, default_dtype
from .run_ctx import get_run_ctx


def product_of_sizes(sizes):
    """The product of sizes (ints or scalar raw tensors; 1 for none): an op only per multiplication of two."""
    total = None
    for s in sizes:
        total = s if total is None else total * s
    return 1 if total is None else total


def convert_to_tensor(value: Any, *, dims: Sequence[Dim] = (), dtype: Optional[str] = None,
                      sparse_dim: Optional[Dim] = None, name: str = "constant", backend=None, **roles) -> Tensor:
    """A Tensor of `value` (a number, NumPy array or raw tensor) laid out as `dims`."""
    backend = backend or backend_for()
    if dtype is None:
        dtype = backend.dtype_name(value) if backend.is_raw(value) else default_dtype(value)
    data = Data(name, tuple(dims), dtype, sparse_dim=sparse_dim, **roles)
    return Tensor(data, backend.convert_to_raw(value, dtype))


def shape_of(dims: Sequence[Dim]) -> List[Any]:
    """The padded lengths of `dims` in this run (ints where static)."""
    ctx = get_run_ctx()
    return [ctx.dim_value(d) for d in dims]


def frames_in(x: Tensor, dims: Sequence[Dim], dtype: str = "float32") -> Tensor:
    """How many frames of `dims` `x` holds, padding included: the product of its lengths along them (a scalar)."""
    shape = backend_for(x).get_shape_tuple_raw(x.raw)
    count = product_of_sizes([shape[x.axis_of(d)] for d in dims])
    if isinstance(count, int):
        return convert_to_tensor(count, dtype=dtype)
    from .math import cast

    return cast(Tensor(Data("frames", (), "int32"), count), dtype)


def full(dims: Sequence[Dim], fill_value: Any, *, dtype: str = "float32", sparse_dim: Optional[Dim] = None,
         name: str = "full", **roles) -> Tensor:
    backend = backend_for()
    raw = backend.fill_raw(shape_of(dims), fill_value, dtype)
    return Tensor(Data(name, tuple(dims), dtype, sparse_dim=sparse_dim, **roles), raw)


def zeros(dims: Sequence[Dim], dtype: str = "float32", **kwargs) -> Tensor:
    return full(dims, 0, dtype=dtype, **kwargs)


def ones(dims: Sequence[Dim], dtype: str = "float32", **kwargs) -> Tensor:
    return full(dims, 1, dtype=dtype, **kwargs)


def zeros_like(x: Tensor) -> Tensor:
    return full(x.dims, 0, dtype=x.dtype, sparse_dim=x.sparse_dim, name=x.name,
                time_dim=x.time_dim, feature_dim=x.feature_dim)


def permute(x: Tensor, dims: Sequence[Dim]) -> Tensor:
    """`x` with its axes in the order `dims` (the same set of dims). Roles and names stay."""
    dims = tuple(dims)
    if dims == x.dims:
        return x
    perm = [x.axis_of(d) for d in dims]
    if sorted(perm) != list(range(len(x.dims))):
        raise ValueError(f"permute: {list(dims)} is not a reordering of {x.data.describe()}")
    return Tensor(x.data.copy(dims=dims), backend_for(x).transpose_raw(x.raw, perm))


def replace_dim(x: Tensor, *, in_dim: Dim, out_dim: Dim) -> Tensor:
    """The same values with the axis of `in_dim` now carrying `out_dim` (which must have the same length)."""
    if in_dim.size is not None and out_dim.size is not None and in_dim.size != out_dim.size:
        raise ValueError(f"replace_dim: {in_dim} and {out_dim} differ in size")
    return Tensor(x.data.copy_replace_dim(in_dim, out_dim), x.raw)


def expand_dim(x: Tensor, dim: Dim, *, axis: Optional[int] = None) -> Tensor:
    """`x` with the new axis `dim` (at `axis`, default last); its values are repeated along it."""
    backend = backend_for(x)
    axis = len(x.dims) if axis is None else axis
    raw = backend.expand_dims_raw(x.raw, axis)
    dims = x.dims[:axis] + (dim,) + x.dims[axis:]
    if dim.size != 1:
        shape = list(backend.get_shape_tuple_raw(raw))
        shape[axis] = get_run_ctx().dim_value(dim)
        raw = backend.broadcast_to_raw(raw, shape)
    return Tensor(x.data.copy(dims=dims, time_dim=x.time_dim, feature_dim=x.feature_dim), raw)


def squeeze(x: Tensor, axis: Union[Dim, Sequence[Dim]]) -> Tensor:
    """`x` without the axis `axis` (of length 1), or without each of several such axes (one op)."""
    axes = [axis] if isinstance(axis, Dim) else list(axis)
    return Tensor(x.data.copy_without_dims(axes), backend_for(x).squeeze_raw(x.raw, [x.axis_of(d) for d in axes]))


def merge_dims(x: Tensor, *, dims: Sequence[Dim], out_dim: Optional[Dim] = None) -> Tuple[Tensor, Dim]:
    """`x` with `dims` flattened into one axis (row-major in the order given), where the first of them was."""
    dims = list(dims)
    out_dim = out_dim or merged_dim(dims)
    if len(dims) == 1 and out_dim == dims[0]:
        return x, out_dim
    first = min(x.axis_of(d) for d in dims)
    rest = [d for d in x.dims if d not in dims]
    order = rest[:first] + dims + rest[first:]
    x = permute(x, order)
    backend = backend_for(x)
    shape = list(backend.get_shape_tuple_raw(x.raw))
    n = len(dims)
    raw = backend.reshape_raw(x.raw, shape[:first] + [product_of_sizes(shape[first:first + n])] + shape[first + n:])
    out_dims = tuple(rest[:first]) + (out_dim,) + tuple(rest[first:])
    roles = {role: (getattr(x.data, role) if getattr(x.data, role) in out_dims else
                    (out_dim if getattr(x.data, role) in dims else None)) for role in ("time_dim", "feature_dim")}
    return Tensor(x.data.copy(dims=out_dims, **roles), raw), out_dim


def split_dims(x: Tensor, *, axis: Dim, dims: Sequence[Dim], pad_to_multiples: bool = False,
               pad_value: Any = 0) -> Tensor:
    """`x` with the axis `axis` split into `dims` (row-major), in its place; with `pad_to_multiples`, the axis is
    first padded at the end with `pad_value` to a multiple of the static dims' product."""
    backend = backend_for(x)
    index = x.axis_of(axis)
    raw = x.raw
    shape = list(backend.get_shape_tuple_raw(raw))
    static = 1
    for d in dims:
        if d.size is not None:
            static *= d.size
    if pad_to_multiples and static > 1:
        pad = (-shape[index]) % static
        if not (isinstance(pad, int) and pad == 0):  # a static length that is a multiple already: no pad op
            paddings = [(0, 0)] * len(shape)
            paddings[index] = (0, pad)
            raw = backend.pad_raw(raw, paddings, "constant", pad_value)
            shape = list(backend.get_shape_tuple_raw(raw))
    sizes = [d.size if d.size is not None else -1 for d in dims]
    raw = backend.reshape_raw(raw, shape[:index] + sizes + shape[index + 1:])
    out_dims = x.dims[:index] + tuple(dims) + x.dims[index + 1:]
    return Tensor(x.data.copy(dims=out_dims), raw)


def split(x: Tensor, *, axis: Dim, out_dims: Sequence[Dim]) -> Tuple[Tensor, ...]:
    """`x` cut along the static axis `axis` into parts of the sizes of `out_dims`, each carrying its Dim."""
    index = x.axis_of(axis)
    raws = backend_for(x).split_raw(x.raw, [d.size for d in out_dims], index)
    return tuple(Tensor(x.data.copy_replace_dim(axis, d), r) for d, r in zip(out_dims, raws))


def concat(*sources: Tuple[Tensor, Dim], out_dim: Dim) -> Tensor:
    """The sources joined along their dims given beside them (one axis `out_dim` in the result). Their other
    dims must agree (as sets); the first source's order is kept."""
    first, first_dim = sources[0]
    index = first.axis_of(first_dim)
    raws = []
    for x, dim in sources:
        order = [dim if d == first_dim else d for d in first.dims]
        raws.append(permute(x, order).raw)
    raw = backend_for(first).concat_raw(raws, index)
    return Tensor(first.data.copy_replace_dim(first_dim, out_dim), raw)


def stack(sources: Sequence[Tensor], *, out_dim: Dim, axis: Optional[int] = None) -> Tensor:
    """The sources (same dims) stacked along a new axis `out_dim` (at `axis`, default last)."""
    first = sources[0]
    axis = len(first.dims) if axis is None else axis
    raws = [permute(x, first.dims).raw for x in sources]
    raw = backend_for(first).stack_raw(raws, axis)
    dims = first.dims[:axis] + (out_dim,) + first.dims[axis:]
    return Tensor(first.data.copy(dims=dims, time_dim=first.time_dim, feature_dim=first.feature_dim), raw)


def pad(x: Tensor, *, axes: Sequence[Dim], padding: Sequence[Tuple[Any, Any]], out_dims: Sequence[Dim],
        mode: str = "constant", value: Any = 0) -> Tensor:
    """`x` padded by (left, right) frames on each of `axes` (which become `out_dims`), on the padded tensor
    as it is (no per-sequence logic: padding after a short sequence's end lands behind its padding)."""
    paddings = [(0, 0)] * len(x.dims)
    data = x.data
    for dim, (left, right), out in zip(axes, padding, out_dims):
        paddings[x.axis_of(dim)] = (left, right)
        data = data.copy_replace_dim(dim, out)
    return Tensor(data, backend_for(x).pad_raw(x.raw, paddings, mode, value))


def slice(x: Tensor, *, axis: Dim, start: Any = None, end: Any = None, step: Any = None,  # noqa: A001
          out_dim: Dim) -> Tensor:
    """x[start:end:step] along `axis`, which becomes `out_dim`."""
    raw = backend_for(x).slice_raw(x.raw, x.axis_of(axis), start, end, step)
    return Tensor(x.data.copy_replace_dim(axis, out_dim), raw)


def gather(source: Tensor, *, indices: Any, axis: Dim, clip_to_valid: bool = False) -> Tensor:
    """Entries of `source` along `axis` at `indices`.

    An int index removes the axis. A Tensor of indices: the dims it shares with `source` (other than `axis`)
    are batch dims; the result has dims: shared, then the indices' other dims, then the source's remaining
    dims. `clip_to_valid` clips indices into [0, length - 1] of the padded axis (an int index too).
    """
    backend = backend_for(source, indices)
    index = source.axis_of(axis)
    if not isinstance(indices, Tensor):
        idx_raw = backend.convert_to_raw(indices, "int32")
        if clip_to_valid and indices > 0:  # index 0 is the first frame of any axis that has one
            length = backend.get_shape_tuple_raw(source.raw)[index]
            idx_raw = backend.convert_to_raw(min(indices, length - 1), "int32") if isinstance(length, int) else \
                backend.combine_raw(idx_raw, "minimum", backend.combine_raw(length, "sub", 1))
        raw = backend.gather_raw(source.raw, idx_raw, index, 0)
        return Tensor(source.data.copy_without_dims([axis]), raw)
    shared = [d for d in source.dims if d != axis and indices.has_dim(d)]
    new = [d for d in indices.dims if d not in shared]
    rest = [d for d in source.dims if d != axis and d not in shared]
    src = permute(source, shared + [axis] + rest)
    idx = permute(indices, shared + new)
    idx_raw = idx.raw
    if clip_to_valid:
        length = backend.get_shape_tuple_raw(src.raw)[len(shared)]
        idx_raw = clipped_indices_raw(backend, idx_raw, indices.dtype, length)
    raw = backend.gather_raw(src.raw, idx_raw, len(shared), len(shared))
    out_dims = tuple(shared + new + rest)
    roles = {role: (getattr(source.data, role) if getattr(source.data, role) in out_dims else None)
             for role in ("time_dim", "feature_dim")}
    return Tensor(Data(source.name, out_dims, source.dtype, sparse_dim=source.sparse_dim, **roles), raw)


def clipped_indices_raw(backend, idx_raw: Any, dtype: str, length: Any) -> Any:
    """Raw indices of `dtype` clipped into [0, length - 1] (`length`: an int, or a raw scalar of an axis's length)."""
    high = length - 1 if isinstance(length, int) else backend.cast_raw(backend.combine_raw(length, "sub", 1), dtype)
    return backend.clip_by_value_raw(idx_raw, backend.convert_to_raw(0, dtype), backend.convert_to_raw(high, dtype))


def range_over_dim(dim: Dim, *, dtype: str = "int32", like: Optional[Tensor] = None) -> Tensor:
    """[0, 1, ..., length - 1] along `dim` (its padded length in this run, or the length of `like`'s axis `dim`);
    sparse over `dim`."""
    backend = backend_for(like)
    if like is not None and like.has_dim(dim) and dim.size is None:
        length = backend.get_shape_tuple_raw(like.raw)[like.axis_of(dim)]
    else:
        length = get_run_ctx().dim_value(dim)
    raw = backend.range_raw(length, dtype)
    return Tensor(Data(f"range:{dim.description}", (dim,), dtype, sparse_dim=dim if dtype.startswith("int") else None),
                  raw)


def sequence_mask(dims: Sequence[Dim], like: Optional[Tensor] = None) -> Optional[Tensor]:
    """Bool Tensor, True on the frames that are valid in every dim of `dims`; None if none has padding."""
    ctx = get_run_ctx()
    mask = None
    for dim in dims:
        part = ctx.mask(dim, like)
        if part is not None:
            mask = part if mask is None else mask & part
    return mask


def masked(x: Tensor, dims: Sequence[Dim], fill: Any) -> Tensor:
    """`x` with the padded frames of `dims` set to `fill`."""
    from .math import where

    mask = sequence_mask([d for d in dims if x.has_dim(d)], like=x)
    if mask is None:
        return x
    lacking = [d for d in mask.dims if not x.has_dim(d)]
    if lacking:  # e.g. `x` has no batch dim: a frame is valid where it is valid for some sequence
        from .reduce import reduce

        mask = reduce(mask, mode="any", axis=lacking, use_mask=False)
    return permute(where(mask, x, fill), x.dims).with_data(x.data)


def reverse_sequence(x: Tensor, *, axis: Dim) -> Tensor:
    """Each sequence reversed within its own length along `axis` (its padding stays behind it)."""
    ctx = get_run_ctx()
    sizes = ctx.size(axis)
    backend = backend_for(x)
    if isinstance(sizes, int) or not sizes.dims:
        return Tensor(x.data, backend.slice_raw(x.raw, x.axis_of(axis), None, None, -1))
    (batch,) = sizes.dims
    return Tensor(x.data, backend.reverse_sequence_raw(x.raw, sizes.raw, x.axis_of(axis), x.axis_of(batch)))


def cumsum(x: Tensor, *, axis: Dim, reverse: bool = False) -> Tensor:
    return Tensor(x.data, backend_for(x).cumsum_raw(x.raw, x.axis_of(axis), reverse))


def dim_size_tensor(dim: Dim) -> Tensor:
    """The size of `dim` as a Tensor (a scalar for static dims and the batch; per-sequence sizes otherwise)."""
    size = get_run_ctx().size(dim)
    if isinstance(size, Tensor):
        return size
    return convert_to_tensor(size, dims=(), dtype="int32", name=f"size:{dim.description}")


def pack_padded(x: Tensor, *, dims: Sequence[Dim], out_dim: Optional[Dim] = None) -> Tuple[Tensor, Dim]:
    """The frames of `dims` that are valid in every one of them (padding dropped), flattened into one axis
    `out_dim` (a new dynamic dim if None) in front of `x`'s other dims: row-major in the order of `dims` (batch
    first: each sequence's frames in turn). Their number becomes `out_dim`'s size (a scalar) in this run."""
    dims = list(dims)
    out_dim = out_dim or Dim(None, SPATIAL, "packed")
    rest = [d for d in x.dims if d not in dims]
    x = permute(x, dims + rest)
    backend = backend_for(x)
    mask = sequence_mask(dims, like=x)
    if mask is None:
        raw = x.raw if len(dims) == 1 else merge_dims(x, dims=dims, out_dim=out_dim)[0].raw
    else:
        outside = [d for d in mask.dims if d not in dims]
        if outside:
            raise ValueError(f"pack_padded: the lengths of {dims} vary along {outside}, which are not packed")
        for d in dims:
            if not mask.has_dim(d):
                mask = expand_dim(mask, d)
        raw = backend.boolean_mask_raw(x.raw, permute(mask, dims).raw)
    get_run_ctx().set_size(out_dim, backend.get_shape_tuple_raw(raw)[0], size_dims=())
    return Tensor(x.data.copy(dims=(out_dim,) + tuple(rest), time_dim=out_dim), raw), out_dim


def one_hot(x: Tensor, *, dtype: str = "float32") -> Tensor:
    """Class indices `x` as vectors along its sparse dim (a new last axis, the feature dim): 1 at the index,
    0 elsewhere."""
    classes = x.sparse_dim
    if classes is None or classes.size is None:
        raise ValueError(f"one_hot: {x.data.describe()} is not sparse over a static dim")
    raw = backend_for(x).one_hot_raw(x.raw, classes.size, dtype)
    return Tensor(Data(x.name, x.dims + (classes,), dtype, time_dim=x.time_dim, feature_dim=classes), raw)
