"""reinterpret_data: the input's values unchanged, with different axis roles, Dims or sparsity."""

from typing import Any, Dict, List, Tuple

from netcompiler import frontend as rf
from netcompiler.errors import DimMismatchError
from netcompiler.layer_base import NONE_TYPE, LayerBase, Option
from netcompiler.tensor import FEATURE, INT_DTYPES, Data, Dim, Tensor, pad_dim, resolve_axes, resolve_dim

from .shape import moved, size_text


class _NotSpecified:
    """Default of `set_sparse_dim`, where None has a meaning of its own (not sparse)."""

    def __repr__(self):
        return "NotSpecified"


NOT_SPECIFIED = _NotSpecified()

_ROLE_KEYS = {"b": "batch", "batch": "batch", "batch_dim_axis": "batch",
              "t": "time_dim", "time": "time_dim", "time_dim_axis": "time_dim",
              "f": "feature_dim", "feature": "feature_dim", "feature_dim_axis": "feature_dim"}


def _same_size(a: Dim, b: Dim) -> bool:
    """Whether one axis can be read as the other: equal static sizes, or both unknown (batch, dynamic)."""
    return a.size == b.size


class ReinterpretDataLayer(LayerBase):
    """Its input, relabelled: the tensor is not transposed or changed (except by `enforce_*_major`, and the
    cut of `size_base` below).

    Options, applied in this order:
    `enforce_batch_major` (False) / `enforce_time_major` (False): transpose to [B, ...] / [T, B, ...];
    `switch_axes` (None): two axes, e.g. "BT" or ["T", "F"], whose Dims trade places (their sizes must agree);
    `size_base` (None): a layer whose time Dim replaces the input's time Dim (e.g. to get the original
    sequence lengths back after split_dims + merge_dims);
    `set_axes` (None): {"T"|"F": axis description or None}, sets the time/feature role (the batch role
    cannot be moved: not supported by netcompiler yet);
    `set_dim_tags` (None): {axis description or Dim: new Dim}, the new Dim replaces the old one; its static
    size must be the same (a new dynamic Dim takes the old one's sizes at run time);
    `set_sparse` (None): True makes integer input sparse (needs `set_sparse_dim` unless already sparse),
    False makes it dense;
    `set_sparse_dim` (NotSpecified): the number of classes (int, new Dim `<layer>:sparse`) or a Dim;
    None means not sparse;
    `increase_sparse_dim` (None): adds this many classes (the derived Dim `pad_dim(sparse, 0, n)`).
    Emission: the input, transposed as `enforce_*` says, relabelled with the output's dims; with `size_base`,
    the time axis is cut to the padded length of the base's time axis in this run (frames beyond it are padding
    of every sequence), so that both tensors line up. A new dynamic Dim from `set_dim_tags` gets the sizes of
    the Dim it replaces in the run's size table.
    """

    layer_class = "reinterpret_data"
    options = {
        "switch_axes": Option(None, (str, list, tuple, NONE_TYPE), doc='e.g. "BT"'),
        "size_base": Option(None, (str, NONE_TYPE), ref="layer"),
        "set_axes": Option(None, (dict, NONE_TYPE), doc='e.g. {"T": "spatial:1"}'),
        "set_dim_tags": Option(None, (dict, NONE_TYPE)),
        "enforce_batch_major": Option(False, (bool,)),
        "enforce_time_major": Option(False, (bool,)),
        "set_sparse": Option(None, (bool, NONE_TYPE)),
        "set_sparse_dim": Option(NOT_SPECIFIED, (int, Dim, NONE_TYPE)),
        "increase_sparse_dim": Option(None, (int, NONE_TYPE)),
    }

    def make_output(self):
        return self._stages()[-1]

    def _stages(self) -> List[Data]:
        """The template after each option in turn: the input, then after enforce_*, switch_axes, size_base,
        set_axes, set_dim_tags and the sparsity options (the output). Only enforce_* moves axes: from there on,
        each axis keeps its place and only its Dim or role changes."""
        stages = [self.input_data.copy(name=self.name)]
        for step in (self._enforce_layout, self._switch_axes, self._size_base, self._set_axes,
                     self._set_dim_tags, self._sparsity):
            stages.append(step(stages[-1]))
        return stages

    def _enforce_layout(self, x: Data) -> Data:
        if self.opts["enforce_batch_major"] and self.opts["enforce_time_major"]:
            raise self.error("'enforce_batch_major' and 'enforce_time_major' cannot both be True",
                             option="enforce_time_major")
        if self.opts["enforce_batch_major"]:
            return x.copy_with_batch_first()
        if not self.opts["enforce_time_major"]:
            return x
        if x.time_dim is None:
            raise self.error(f"'enforce_time_major': the input {x.describe()} has no time axis",
                             option="enforce_time_major")
        return moved(x.copy_with_batch_first(), x.time_dim, 0, x.name)

    def _switch_axes(self, x: Data) -> Data:
        desc = self.opts["switch_axes"]
        if desc is None:
            return x
        axes = resolve_axes(x, desc, layer=self.name, option="switch_axes")
        if len(axes) != 2:
            raise self.error(f"'switch_axes' {desc!r} names {len(axes)} axes of {x.describe()}; it needs two",
                             option="switch_axes", suggestion='e.g. "BT"')
        first, second = (x.dims[a] for a in axes)
        if not _same_size(first, second):
            raise self.error(f"'switch_axes': {x.dim_label(first)} ({size_text(first)}) and {x.dim_label(second)} "
                             f"({size_text(second)}) cannot trade places", option="switch_axes",
                             kind=DimMismatchError)
        dims = list(x.dims)
        dims[axes[0]], dims[axes[1]] = second, first
        return x.copy(dims=dims)

    def _size_base(self, x: Data) -> Data:
        base = self.opts["size_base"]
        if base is None:
            return x
        new = base.output.time_dim
        if new is None or x.time_dim is None:
            which = f"'{base.name}' {base.output.describe()}" if new is None else f"the input {x.describe()}"
            raise self.error(f"'size_base': {which} has no time axis", option="size_base", kind=DimMismatchError)
        if new == x.time_dim:
            return x
        if x.has_dim(new) or (new.size is not None and x.time_dim.size is not None and new.size != x.time_dim.size):
            raise self.error(f"'size_base': the time axis of '{base.name}' {base.output.describe()} cannot replace "
                             f"the time axis of the input {x.describe()}", option="size_base", kind=DimMismatchError)
        return x.copy_replace_dim(x.time_dim, new)

    def _set_axes(self, x: Data) -> Data:
        given = self.opts["set_axes"]
        if not given:
            return x
        roles: Dict[str, Any] = {}
        for key, desc in given.items():
            role = _ROLE_KEYS.get(str(key).lower())
            if role is None:
                raise self.error(f"'set_axes' key {key!r} unknown", option="set_axes",
                                 suggestion="use 'T' (time) or 'F' (feature)")
            dim = None if desc is None else resolve_dim(x, desc, layer=self.name, option="set_axes")
            if role == "batch" and dim != x.dims[x.batch_dim_axis or 0]:
                raise self.error("'set_axes' cannot move the batch axis: not supported by netcompiler yet",
                                 option="set_axes")
            if role != "batch" and dim is not None and dim.is_batch:
                raise self.error(f"'set_axes' {key!r}: the batch axis cannot be the {role.split('_')[0]} axis",
                                 option="set_axes")
            if role != "batch":
                roles[role] = dim
        time = roles.get("time_dim")
        if time is not None and time == x.feature_dim and "feature_dim" not in roles:
            # as RETURNN: the feature axis made the time axis leaves the feature role to the last other static axis
            rest = [d for d in x.dims if not d.is_batch and d != time and not d.is_dynamic]
            roles["feature_dim"] = rest[-1] if rest else None
        return x.copy(**roles)

    def _set_dim_tags(self, x: Data) -> Data:
        return self._renamed(x)[0]

    def _renamed(self, x: Data) -> Tuple[Data, List[Tuple[Dim, Dim]]]:
        """`x` after `set_dim_tags`, and the (old, new) Dims it replaced."""
        given = self.opts["set_dim_tags"]
        renamed = []
        for key, new in (given or {}).items():
            old = resolve_dim(x, key, layer=self.name, option="set_dim_tags")
            if not isinstance(new, Dim):
                raise self.error(f"'set_dim_tags' {key!r}: expected a Dim, not {new!r}", option="set_dim_tags")
            if old == new:
                continue
            if old.is_batch or new.is_batch or x.has_dim(new) or not _same_size(old, new):
                raise self.error(f"'set_dim_tags' {key!r}: {new.short_repr()} ({size_text(new)}) cannot replace "
                                 f"{x.dim_label(old)} ({size_text(old)}) in {x.describe()}", option="set_dim_tags",
                                 kind=DimMismatchError)
            x = x.copy_replace_dim(old, new)
            renamed.append((old, new))
        return x, renamed

    def _sparsity(self, x: Data) -> Data:
        sparse_dim = self._new_sparse_dim(x)
        increase = self.opts["increase_sparse_dim"]
        if increase:
            if sparse_dim is None:
                raise self.error(f"'increase_sparse_dim' needs sparse data, but {x.describe()} is dense",
                                 option="increase_sparse_dim", suggestion="set 'set_sparse': True")
            if sparse_dim.size is not None and sparse_dim.size + increase < 1:
                raise self.error(f"'increase_sparse_dim' {increase} leaves no classes of {sparse_dim.short_repr()}",
                                 option="increase_sparse_dim")
            sparse_dim = pad_dim(sparse_dim, 0, increase, description=f"{sparse_dim.description}{increase:+d}")
        if sparse_dim == x.sparse_dim:
            return x
        if sparse_dim is not None and not x.sparse and x.dtype not in INT_DTYPES:
            raise self.error(f"'set_sparse': sparse data holds class indices, but the input {x.describe()} has "
                             f"dtype {x.dtype}",
                             option="set_sparse", suggestion="add a 'cast' layer to int32 first")
        if sparse_dim is None:
            return x.copy(sparse_dim=None, time_dim=x.time_dim)  # the feature role is chosen afresh
        return x.copy(sparse_dim=sparse_dim, time_dim=x.time_dim, feature_dim=None)

    def _new_sparse_dim(self, x: Data):
        """The sparse Dim after `set_sparse` and `set_sparse_dim` (None: dense)."""
        flag, given = self.opts["set_sparse"], self.opts["set_sparse_dim"]
        if given is NOT_SPECIFIED:
            if flag and not x.sparse:
                raise self.error(f"'set_sparse': True needs 'set_sparse_dim' (the number of classes) for the dense "
                                 f"input {x.describe()}", option="set_sparse_dim")
            return None if flag is False else x.sparse_dim
        if given is None:
            return None
        if flag is False:
            raise self.error("'set_sparse' is False, but 'set_sparse_dim' gives classes", option="set_sparse_dim",
                             suggestion="drop one of the two")
        if flag is None and not x.sparse:
            raise self.error(f"'set_sparse_dim' makes sense only for sparse data, and {x.describe()} is dense",
                             option="set_sparse_dim", suggestion="set 'set_sparse': True")
        if isinstance(given, Dim):
            return given
        if given < 1:
            raise self.error(f"'set_sparse_dim' is {given}; it needs at least 1 class", option="set_sparse_dim")
        return self.new_dim(given, FEATURE, f"{self.name}:sparse")

    def emit(self, inputs):
        _, layout, switched, based, with_roles, _, _ = self._stages()
        x = rf.permute(inputs.x, layout.dims)
        for old, new in self._renamed(with_roles)[1]:
            if new.is_dynamic and new.derivation is None:
                inputs.set_size(new, inputs.run.size(old))
        if based is not switched:  # size_base replaced the time dim: cut the axis to the base's length
            inputs.value(self.opts["size_base"])  # emitted first, so that the sizes of its time dim are known
            axis = layout.dims[switched.time_dim_axis]  # the axis that carries the time dim after switch_axes
            x = rf.slice(x, axis=axis, start=0, end=inputs.run.dim_value(based.time_dim), out_dim=axis)
        return Tensor(self.output, x.raw)  # the same axes, relabelled
