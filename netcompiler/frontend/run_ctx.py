"""The run context: which backend runs, whether this is training, and the sizes of dynamic Dims.

Dynamic sizes are not stored on Dims: a run keeps them here, as Tensors keyed
by Dim (the batch dim's size is a scalar; a time dim's sizes are lengths, e.g.
[B] or [B, beam]). Sizes of derived Dims (a strided conv over time, batch x
beam, ...) are computed from their parents' on first use and kept. Masks of
padded frames are made from the sizes on demand. Contexts nest: a loop step's
context sees the sizes of the context around it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple, Union

from ..errors import TemplateMismatchError
from ..tensor import Data, Dim, Tensor, batch_dim

_stack: List["RunContext"] = []

_NO_PADDING = object()
"""What `keep_mask` keeps for a dim none of whose frames is padding (`mask` then gives None)."""


@dataclass
class MarkedLoss:
    """A loss (or error) that model code reported in a run with `mark_as_loss`.

    `loss` holds a value per frame (padded frames of its dynamic dims do not count); a raw value that model
    code passed (a plain PyTorch loss) becomes a Tensor over static dims of its shape, every element a frame.
    Training minimises the sum over all frames times `scale` (divided by the number of frames with
    `use_normalized_loss`; by `custom_inv_norm_factor` where given); `as_error` values are only reported.
    """

    name: str
    loss: Tensor
    as_error: bool = False
    scale: float = 1.0
    use_normalized_loss: bool = False
    custom_inv_norm_factor: Optional[Tensor] = None


class SizeTable:
    """Dim -> size, robust to `Dim.declare_same_as` after a Dim was first used as a key.

    Lookups try the Dim itself, then its current root, then any stored Dim that now equals it.
    """

    def __init__(self):
        self._entries: Dict[int, Tuple[Dim, Any]] = {}

    def set(self, dim: Dim, value: Any) -> None:
        self._entries[id(dim)] = (dim, value)

    def get(self, dim: Dim) -> Any:
        for candidate in (dim, dim.root()):
            entry = self._entries.get(id(candidate))
            if entry is not None:
                return entry[1]
        for stored, value in self._entries.values():
            if stored == dim:
                return value
        return None

    def __contains__(self, dim: Dim) -> bool:
        return self.get(dim) is not None


class RunContext:
    """One run (a forward pass, a train step, a loop step) of one backend."""

    def __init__(self, backend, *, training: bool = False, parent: Optional["RunContext"] = None, beam: int = 1):
        self.backend = backend
        self.training = training
        self.parent = parent
        self.beam = beam
        """In a step of beam search: the beam size. The batch dim then stands for batch x beam (entry b*beam + k
        is hypothesis k of sequence b), and the sizes known outside are repeated per hypothesis."""
        self.sizes = SizeTable()
        self.masks = SizeTable()
        """Dim -> its mask, where made ahead (`keep_mask`: e.g. before a loop, for the dims of what it reads)."""
        self.losses: Dict[str, MarkedLoss] = {}
        """What model code marked as losses in this run, by name (kept in the outermost context)."""
        self.outputs: Dict[str, Tensor] = {}
        """What model code marked as outputs, by name ("output" for the default output)."""
        self.expected_outputs = None
        """In a forward step: the templates of the outputs the config declares (`model_outputs`, a TensorDict);
        a raw value marked under such a name takes its dims."""

    # --- the context stack ------------------------------------------------------------------
    def __enter__(self) -> "RunContext":
        _stack.append(self)
        return self

    def __exit__(self, *exc) -> None:
        _stack.pop()

    def child(self, beam: int = 1) -> "RunContext":
        """A nested context (a loop step) that sees this one's sizes (with `beam` > 1: per hypothesis)."""
        return RunContext(self.backend, training=self.training, parent=self, beam=beam)

    # --- sizes --------------------------------------------------------------------------------
    def set_size(self, dim: Dim, size: Union[Tensor, Any], size_dims=(batch_dim,)) -> None:
        """Records the sizes of a dynamic Dim: a Tensor, or a raw int tensor with dims `size_dims`."""
        if not isinstance(size, Tensor):
            raw = self.backend.cast_raw(size, "int32") if self.backend.is_raw(size) else \
                self.backend.convert_to_raw(size, "int32")
            size = Tensor(Data(f"size:{dim.description}", tuple(size_dims), "int32"), raw)
        self.sizes.set(dim, size)

    def dyn_size_ext(self, dim: Dim) -> Tensor:
        """The sizes Tensor of the dynamic `dim` in this run (`Dim.dyn_size_ext`); for a dim whose sizes are not
        known yet (an expected output's time dim), an empty [batch] Tensor kept here, for model code to fill
        through its `raw_tensor`."""
        known = self._inherited("sizes", dim)
        if known is not None or dim.derivation is not None:
            return known if known is not None else self.size(dim)
        empty = Tensor(Data(f"size:{dim.description}", (batch_dim,), "int32"))
        self.sizes.set(dim, empty)
        return empty

    def size(self, dim: Dim) -> Union[int, Tensor]:
        """The size of `dim`: an int if static, else a Tensor (batch: a scalar; others: per-sequence sizes)."""
        if dim.size is not None:
            return dim.size
        known = self._inherited("sizes", dim)
        if known is not None:
            return known
        if dim.derivation is None:
            raise TemplateMismatchError(f"no sizes are known for the dynamic dim {dim!r} in this run (netcompiler "
                                        f"bug: the layer that makes a new dynamic dim must set its sizes)")
        from . import math as rf_math

        value = dim.compute_size(self._size_or_int, rf_math.maximum)
        if isinstance(value, Tensor):
            value = value.copy(name=f"size:{dim.description}")
        self.sizes.set(dim, value)
        return value

    def _size_or_int(self, dim: Dim):
        return self.size(dim)

    def _inherited(self, table: str, dim: Dim):
        """`dim`'s entry in table `table` ("sizes" or "masks") of this context or the nearest parent that has one;
        in a beam search step, repeated per hypothesis (and kept here)."""
        found = getattr(self, table).get(dim)
        if found is not None or self.parent is None:
            return found
        found = self.parent._inherited(table, dim)
        if found is not None and found is not _NO_PADDING and self.beam > 1:
            from .beam import tile_batch

            found = found * self.beam if dim.is_batch and not found.dims else tile_batch(found, self.beam)
            getattr(self, table).set(dim, found)
        return found

    def dim_value(self, dim: Dim) -> Any:
        """The length of `dim`'s axis in a padded tensor: the int if static, else a raw scalar (the batch
        size, or the longest sequence)."""
        size = self.size(dim)
        if isinstance(size, int):
            return size
        if not size.dims:
            return size.raw
        return self.backend.reduce_raw(size.raw, "max", list(range(len(size.dims))))

    def mask(self, dim: Dim, like: Optional[Tensor] = None) -> Optional[Tensor]:
        """Bool Tensor, True on valid frames of `dim` (dims: the sizes' dims, then `dim`); None if `dim` has
        no padding (static, or the batch; in an eager run also a dynamic dim whose sequences all fill the padded
        length, so that masking and packing ops are skipped). `like`: a tensor with axis `dim`, whose length the
        mask takes."""
        if dim.size is not None or dim.is_batch:
            return None
        kept = self._inherited("masks", dim)
        if kept is not None:
            return None if kept is _NO_PADDING else kept
        sizes = self.size(dim)
        if not isinstance(sizes, Tensor) or not sizes.dims:
            return None
        backend = self.backend
        if like is not None and like.has_dim(dim):
            maxlen = backend.get_shape_tuple_raw(like.raw)[like.axis_of(dim)]
        else:
            maxlen = self.dim_value(dim)
        if backend.frames_all_valid_raw(sizes.raw, maxlen):
            return None
        raw = backend.sequence_mask_raw(sizes.raw, maxlen)
        return Tensor(Data(f"mask:{dim.description}", sizes.dims + (dim,), "bool"), raw)


    def keep_mask(self, dim: Dim) -> None:
        """Makes the mask of `dim` now and keeps it for this context and its children (a loop's steps then
        reuse it instead of making it at every step)."""
        if dim.size is not None or dim.is_batch:
            return
        mask = self.mask(dim)
        self.masks.set(dim, _NO_PADDING if mask is None else mask)


    # --- losses and outputs that model code marks --------------------------------------------
    def root(self) -> "RunContext":
        return self if self.parent is None else self.parent.root()

    def mark_as_loss(self, loss: Any, name: str, *, as_error: bool = False, scale: float = 1.0,
                     use_normalized_loss: bool = False, custom_inv_norm_factor: Optional[Tensor] = None) -> None:
        """Reports `loss` (a Tensor, or a raw value of this run's backend) as the loss `name` of this run."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"mark_as_loss: name must be a non-empty string, not {name!r}")
        root = self.root()
        if name in root.losses:
            raise ValueError(f"mark_as_loss: a loss named {name!r} was already marked in this run")
        if not isinstance(loss, Tensor):
            loss = self._tensor_of_raw(loss, name)
        root.losses[name] = MarkedLoss(name, loss, bool(as_error), float(scale), bool(use_normalized_loss),
                                       custom_inv_norm_factor)

    def mark_as_output(self, tensor: Any, name: str, *, dims=None) -> None:
        """Reports `tensor` (a Tensor, or a raw value) as the output `name` of this run (with `dims`: laid out
        so; a raw value marked under a name of `expected_outputs` gets that template's dims)."""
        root = self.root()
        if name in root.outputs:
            raise ValueError(f"mark_as_output: an output named {name!r} was already marked in this run")
        expected = root.expected_outputs[name] if root.expected_outputs is not None and \
            name in root.expected_outputs else None
        if not isinstance(tensor, Tensor) and expected is not None:
            ndim = len(self.backend.get_known_shape_raw(tensor))
            if ndim != len(expected.dims):
                raise ValueError(f"mark_as_output: the raw value marked as {name!r} has {ndim} axes, but "
                                 f"model_outputs declares {expected.data.describe()}")
            tensor = Tensor(expected.data.copy(name=name), tensor)
        elif not isinstance(tensor, Tensor):
            tensor = self._tensor_of_raw(tensor, name)
        elif dims is not None or expected is not None:
            from .array import permute

            dims = dims if dims is not None else expected.dims
            if set(dims) != set(tensor.dims):
                raise ValueError(f"mark_as_output: the output {name!r} has dims {tensor.data.describe()}, not "
                                 f"{list(dims)}" + (" (declared in model_outputs: give the entry 'dims' with "
                                                    "the model's own Dims)" if expected is not None else ""))
            tensor = permute(tensor, dims)
        root.outputs[name] = tensor

    def mark_as_default_output(self, tensor: Any, *, shape=None, dims=None) -> None:
        """`mark_as_output(tensor, "output")`; `shape` is RETURNN's name for `dims` here."""
        self.mark_as_output(tensor, "output", dims=dims if dims is not None else shape)

    def _tensor_of_raw(self, raw: Any, name: str) -> Tensor:
        if not self.backend.is_raw(raw):
            raw = self.backend.convert_to_raw(raw, "float32")
        shape = self.backend.get_known_shape_raw(raw)
        if any(n is None for n in shape):
            raise ValueError(f"a raw value marked as {name!r} must have a known shape here, not {shape}; "
                             f"mark a Tensor instead")
        dims = tuple(Dim(n, description=f"{name}:axis{i}") for i, n in enumerate(shape))
        return Tensor(Data(name, dims, self.backend.dtype_name(raw)), raw)


def get_run_ctx() -> RunContext:
    """The innermost run context; an error if no run is in progress."""
    if not _stack:
        raise RuntimeError("no run context: ops on Tensors run inside `with RunContext(backend):`")
    return _stack[-1]


def current_run_ctx() -> Optional[RunContext]:
    return _stack[-1] if _stack else None
