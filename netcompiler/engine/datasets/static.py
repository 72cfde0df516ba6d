"""StaticDataset: sequences given in the config as numpy arrays (RETURNN's StaticDataset)."""

from __future__ import annotations

from typing import Any, Dict, List

import numpy as np

from netcompiler.engine.datasets.base import DataSpec, Dataset, Option, parse_data_dims, register


def _ordered_keys(keys) -> List[str]:
    """Sorted, with "data" first (RETURNN's order)."""
    return sorted(keys, key=lambda k: (k != "data", k))


@register
class StaticDataset(Dataset):
    """Sequences from the config: `data` is a list of dicts data key -> np.ndarray.

    The first axis of every array is time. Integer arrays of shape (T,) are
    sparse class indices; their number of classes comes from `output_dim` (an
    int for "classes", or a dict key -> dim or (dim, ndim)). Dense dims come
    from the arrays and must agree with `output_dim` / `input_dim` if given.
    Arrays of shape () are per-sequence values without a time axis.
    """

    OPTIONS = {
        "data": Option((list, tuple), required=True, doc="list of dicts data key -> np.ndarray"),
        "input_dim": Option((int,), None, doc="feature size of 'data'"),
        "output_dim": Option((int, dict), None, doc="dims per key, RETURNN's num_outputs forms"),
        "target_list": Option((list, tuple), None, doc="accepted for RETURNN compatibility; no effect"),
    }

    def __init__(self, name: str = "dataset", **opts: Any):
        super().__init__(name, **opts)
        self._seqs = list(self.options["data"])
        self._spec = self._infer_spec()
        self._check_all_seqs()
        self._check_target_list()

    def _infer_spec(self) -> Dict[str, DataSpec]:
        if not self._seqs:
            raise self.option_error("data", "must contain at least one sequence")
        first = self._check_seq_type(0)
        try:
            dims = parse_data_dims(self.options["output_dim"], input_dim=self.options["input_dim"])
        except ValueError as exc:
            raise self.option_error("output_dim", str(exc)) from None
        unknown = sorted(set(dims) - set(first))
        if unknown:
            raise self.option_error("output_dim", f"names key(s) {unknown} that the data does not have "
                                                  f"(keys: {_ordered_keys(first)})")
        return {key: self._key_spec(key, first[key], dims.get(key)) for key in _ordered_keys(first)}

    def _key_spec(self, key: str, array: np.ndarray, declared) -> DataSpec:
        if array.ndim == 0:
            spec = DataSpec.for_fixed_shape((), array.dtype)
        else:
            spec = DataSpec.for_sequences(array.shape[1:], array.dtype)
        if declared is None:
            return spec
        dim, ndim = declared
        if ndim != array.ndim:
            raise self.option_error("output_dim", f"says key {key!r} has {ndim} axes, but its arrays have {array.ndim}")
        if spec.dim is not None and not spec.sparse and dim != spec.dim:
            raise self.option_error("output_dim", f"says key {key!r} has dim {dim}, but its arrays have {spec.dim}")
        return DataSpec(dim=dim, sparse=spec.sparse, dtype=spec.dtype, shape=spec.shape)

    def _check_seq_type(self, index: int) -> Dict[str, np.ndarray]:
        seq = self._seqs[index]
        if not isinstance(seq, dict) or not seq:
            raise self.option_error("data", f"sequence {index} must be a non-empty dict data key -> np.ndarray")
        for key, value in seq.items():
            if not isinstance(value, np.ndarray):
                raise self.option_error(
                    "data", f"sequence {index}, key {key!r}: expected a numpy.ndarray, got {type(value).__name__}",
                    suggestion="wrap the values in numpy.array(...)")
        return seq

    def _check_all_seqs(self) -> None:
        for index in range(len(self._seqs)):
            seq = self._check_seq_type(index)
            if set(seq) != set(self._spec):
                raise self.option_error("data", f"sequence {index} has keys {_ordered_keys(seq)}, "
                                                f"but sequence 0 has {list(self._spec)}")
            for key, spec in self._spec.items():
                problem = self._array_problem(seq[key], spec)
                if problem:
                    raise self.option_error("data", f"sequence {index}, key {key!r}: {problem}")

    @staticmethod
    def _array_problem(array: np.ndarray, spec: DataSpec):
        if array.dtype.name != spec.dtype:
            return f"dtype {array.dtype.name}, but sequence 0 has {spec.dtype}"
        wrong_ndim = array.ndim != len(spec.shape)
        if wrong_ndim or (spec.has_time_axis and tuple(array.shape[1:]) != spec.frame_shape):
            return f"shape {array.shape}, but sequence 0 has {spec.shape} (None = any length)"
        if spec.sparse and spec.dim is not None and array.size and (array.min() < 0 or array.max() >= spec.dim):
            return f"class indices must be in [0, {spec.dim}), got values in [{array.min()}, {array.max()}]"
        return None

    def _check_target_list(self) -> None:
        missing = [k for k in self.options["target_list"] or () if k not in self._spec]
        if missing:
            raise self.option_error("target_list", f"names key(s) {missing} that the data does not have")

    def data_spec(self) -> Dict[str, DataSpec]:
        return dict(self._spec)

    def _num_corpus_seqs(self) -> int:
        return len(self._seqs)

    def _corpus_seq(self, corpus_index: int) -> Dict[str, np.ndarray]:
        seq = self._seqs[corpus_index]
        return {key: seq[key] for key in self._spec}
