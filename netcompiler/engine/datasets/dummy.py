"""Datasets without meaning, for tests and benchmarks: DummyDataset and RandomDataset."""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

import numpy as np

from netcompiler.engine.datasets.base import (
    DataSpec,
    GeneratedDataset,
    Option,
    non_negative,
    parse_data_dims,
    positive,
    register,
    valid_seed,
)
from netcompiler.limits import is_int


def _num_classes(dataset: GeneratedDataset) -> int:
    """The number of classes of "classes" from the `output_dim` option (RETURNN's forms)."""
    try:
        dims = parse_data_dims(dataset.options["output_dim"])
    except ValueError as exc:
        raise dataset.option_error("output_dim", str(exc)) from None
    extra = sorted(set(dims) - {"classes", "data"})
    if extra or "classes" not in dims or dims["classes"][1] != 1:
        raise dataset.option_error("output_dim", "must give the number of classes of the sparse key 'classes'")
    if "data" in dims and dims["data"] != (dataset.options["input_dim"], 2):
        raise dataset.option_error("output_dim", f"entry 'data' {dims['data']} disagrees with input_dim")
    num = dims["classes"][0]
    if num <= 0:
        raise dataset.option_error("output_dim", f"must be positive, got {num}")
    return num


def _spec(input_dim: int, num_classes: int) -> Dict[str, DataSpec]:
    return {
        "data": DataSpec.for_sequences((input_dim,), "float32"),
        "classes": DataSpec.for_sequences((), "int32", dim=num_classes),
    }


@register
class DummyDataset(GeneratedDataset):
    """RETURNN's DummyDataset: deterministic counting patterns, the same in every epoch.

    Sequence i has `seq_len` frames (an int, or a dict with "data" and
    "classes"); its values continue a counter that starts at i: features are
    ((k % input_max_value) + input_shift) * input_scale for consecutive k, then
    the classes are the following k modulo the number of classes.
    """

    OPTIONS = {
        "input_dim": Option((int,), required=True, check=positive),
        "output_dim": Option((int, dict), required=True, doc="number of classes of 'classes'"),
        "seq_len": Option((int, dict), 2, doc="frames per sequence, or {'data': n, 'classes': m}"),
        "input_max_value": Option((float,), 10.0, check=positive),
        "input_shift": Option((float,), None, doc="default -input_max_value / 2"),
        "input_scale": Option((float,), None, doc="default 1 / input_max_value"),
    }

    def __init__(self, name: str = "dataset", **opts: Any):
        super().__init__(name, **opts)
        self._num_classes = _num_classes(self)
        self._lengths = self._parse_seq_len()
        max_value = self.options["input_max_value"]
        shift, scale = self.options["input_shift"], self.options["input_scale"]
        self._shift = -max_value / 2.0 if shift is None else shift
        self._scale = 1.0 / max_value if scale is None else scale

    def _parse_seq_len(self) -> Tuple[int, int]:
        value = self.options["seq_len"]
        if isinstance(value, dict):
            if set(value) != {"data", "classes"}:
                raise self.option_error("seq_len", f"as a dict must have the keys 'data' and 'classes', got {value!r}")
            lengths = (value["data"], value["classes"])
        else:
            lengths = (value, value)
        for length in lengths:
            problem = non_negative(length) if is_int(length) else f"must be ints, got {length!r}"
            if problem:
                raise self.option_error("seq_len", problem)
        return int(lengths[0]), int(lengths[1])

    def data_spec(self) -> Dict[str, DataSpec]:
        return _spec(self.options["input_dim"], self._num_classes)

    def _generate(self, corpus_index: int, rng: np.random.RandomState) -> Dict[str, np.ndarray]:
        frames, class_frames = self._lengths
        input_dim = self.options["input_dim"]
        counter = np.arange(corpus_index, corpus_index + frames * input_dim)
        features = ((counter % self.options["input_max_value"]) + self._shift) * self._scale
        after = corpus_index + frames * input_dim
        classes = np.arange(after, after + class_frames) % self._num_classes
        return {
            "data": features.astype(np.float32).reshape(frames, input_dim),
            "classes": classes.astype(np.int32),
        }

    def _generate_lengths(self, corpus_index: int, rng: np.random.RandomState) -> Dict[str, int]:
        return {"data": self._lengths[0], "classes": self._lengths[1]}


@register
class RandomDataset(GeneratedDataset):
    """Random data for benchmarks: dense "data" (standard normal, `input_dim`)
    and sparse "classes" (uniform over `output_dim` classes), both with the same
    number of frames, drawn uniformly from `seq_len_range` = (min, max), inclusive.

    The content depends only on `seed` (not on the epoch), so every epoch does
    the same work; `seq_ordering` and its seeds work as for every dataset.
    """

    OPTIONS = {
        "input_dim": Option((int,), required=True, check=positive),
        "output_dim": Option((int,), required=True, check=positive, doc="number of classes"),
        "seq_len_range": Option((list, tuple), (10, 100), doc="(min, max) frames, inclusive"),
        "seed": Option((int,), 0, check=valid_seed, doc="seed of the content"),
    }

    def __init__(self, name: str = "dataset", **opts: Any):
        super().__init__(name, **opts)
        self._min_len, self._max_len = self._parse_range()

    def _parse_range(self) -> Tuple[int, int]:
        value = tuple(self.options["seq_len_range"])
        ok = len(value) == 2 and all(is_int(v) for v in value)
        if not ok or not 0 <= value[0] <= value[1]:
            raise self.option_error("seq_len_range", f"must be (min, max) ints with 0 <= min <= max, got {value!r}")
        return int(value[0]), int(value[1])

    def content_seed(self, epoch: int) -> int:
        return self.options["seed"]

    def data_spec(self) -> Dict[str, DataSpec]:
        return _spec(self.options["input_dim"], self.options["output_dim"])

    def _draw_length(self, rng: np.random.RandomState) -> int:
        return int(rng.randint(self._min_len, self._max_len + 1))

    def _generate(self, corpus_index: int, rng: np.random.RandomState) -> Dict[str, np.ndarray]:
        frames = self._draw_length(rng)
        features = rng.standard_normal((frames, self.options["input_dim"])).astype(np.float32)
        classes = rng.randint(0, self.options["output_dim"], size=frames).astype(np.int32)
        return {"data": features, "classes": classes}

    def _generate_lengths(self, corpus_index: int, rng: np.random.RandomState) -> Optional[Dict[str, int]]:
        frames = self._draw_length(rng)  # the first draw of _generate
        return {"data": frames, "classes": frames}
