"""CombinedDataset: the sequences of several datasets mixed into one epoch (RETURNN's CombinedDataset).

    train = {"class": "CombinedDataset",
             "datasets": {"am": {"class": "HDFDataset", "files": ["am.hdf"]},
                          "lm": {"class": "HDFDataset", "files": ["lm.hdf"]}},
             "data_map": {("am", "data"): "data", ("am", "classes"): "classes", ("lm", "data"): "lm_data"},
             "seq_ordering": "random_dataset"}

`data_map` maps (sub-dataset name, its data key) -> own data key; several sub-datasets may feed the same own
key (same dtype and frame shape; for class indices the larger number of classes counts). A sequence has the data
of its own sub-dataset; the own keys that sub-dataset does not map are empty (0 frames), as in RETURNN. Tags are
the sub-datasets' tags.

Each epoch, every sub-dataset first makes its own epoch (its `seq_ordering`, `partition_epoch`,
`repeat_epoch`); the sub-datasets are taken in the order of their names. Then `seq_ordering` of the
CombinedDataset orders all these sequences together:

* "default": all sequences of the first sub-dataset, then the second, ...; "sorted", "random", "laplace", ...
  (every ordering of other datasets) order them jointly, sorting by each sub-dataset's "data" length;
* "random_dataset": picks the sub-dataset of each next sequence at random (in proportion to the sequences left),
  keeping each sub-dataset's own order;
* "interleave": picks the sub-dataset that is least far through its epoch (ties: the first); with
  `interleave_gumbel_scale` (a float, or "remaining" = 1 - the largest fraction done) the pick is random,
  softened by Gumbel noise as RETURNN does.

`partition_epoch` / `repeat_epoch` of the CombinedDataset apply to the joint order (not with "interleave"). With
`partition_epoch`, the sub-datasets make the epoch of the full epoch (RETURNN: the sub-epoch, so that their own
random orders and generated data change between the parts of one full epoch): each full epoch has every sequence
once.
`sampling_sizes` (an int, or a dict sub-dataset -> int) takes that many sequences of every sub-dataset per epoch,
continuing where the previous epoch stopped (wrapping around), and then orders them with `seq_ordering`.
"""

from __future__ import annotations

import random
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from netcompiler.engine.datasets.base import DataSpec, Option, checked_epoch, register
from netcompiler.engine.datasets.composite import (
    ComposedDataset,
    SubDatasets,
    check_declared,
    sub_epoch,
)
from netcompiler.engine.datasets.consecutive import ConsecutiveParts
from netcompiler.engine.datasets.ordering import SeqOrdering, make_seq_order
from netcompiler.errors import closest_match, quoted
from netcompiler.limits import is_int

SPECIAL_ORDERINGS = ("random_dataset", "interleave")


def _gumbel_scale_check(value: Any) -> Optional[str]:
    if isinstance(value, str):
        return None if value == "remaining" else f"must be a number >= 0 or 'remaining', got {value!r}"
    return None if value >= 0 else f"must not be negative, got {value!r}"


@register
class CombinedDataset(ComposedDataset):
    """The sequences of several sub-datasets in one epoch (see the module docstring)."""

    OPTIONS = {
        "datasets": Option((dict,), required=True, doc="sub-dataset name -> dataset options"),
        "data_map": Option((dict,), required=True, doc="(sub-dataset name, its data key) -> own data key"),
        "sampling_sizes": Option((int, dict), None, doc="sequences taken of each sub-dataset per epoch"),
        "interleave_gumbel_scale": Option((float, str), None, check=_gumbel_scale_check,
                                          doc="seq_ordering 'interleave': random picks (see the module docstring)"),
        "data_dims": Option((dict,), None, doc="RETURNN, deprecated: only compared with the data"),
        "data_dtypes": Option((dict,), None, doc="only compared with the data"),
    }

    def __init__(self, name: str = "dataset", **opts: Any):
        super().__init__(name, **opts)
        self._maps = self._parse_data_map()  # sub-dataset name -> {own key: its key}
        self.subs = SubDatasets(self, self._maps)
        self._names = sorted(self._maps)  # RETURNN's dataset order
        self._spec = self._merge_specs()
        check_declared(self, self._spec)
        self.labels = self.subs.labels_of((own, name, key) for name, keys in self._maps.items()
                                          for own, key in keys.items())
        self._parts = ConsecutiveParts([self.subs[n].total_num_seqs() for n in self._names])
        self._sampling = self._parse_sampling_sizes()
        self._check_ordering_options()

    # -- options ------------------------------------------------------------------------

    def _parse_ordering(self):
        text = self.options["seq_ordering"]
        if text in SPECIAL_ORDERINGS:
            return None  # handled by init_epoch
        try:
            return SeqOrdering.parse(text)
        except ValueError as exc:
            match = closest_match(text.split(":")[0], SeqOrdering.KINDS + SPECIAL_ORDERINGS)
            raise self.option_error("seq_ordering", f"{exc} or one of CombinedDataset's: "
                                                    f"{', '.join(SPECIAL_ORDERINGS)}",
                                    suggestion=f"did you mean '{match}'?" if match else None) from None

    def _parse_data_map(self) -> Dict[str, Dict[str, str]]:
        maps: Dict[str, Dict[str, str]] = {}
        for source, own in self.options["data_map"].items():
            if isinstance(source, str):
                raise self.option_error("data_map", f"has the key {source!r}: a CombinedDataset maps "
                                                    f"(sub-dataset name, its key) -> own data key",
                                        suggestion="the form own key -> (sub-dataset, key) is MetaDataset's")
            ok = isinstance(source, tuple) and len(source) == 2 and all(isinstance(s, str) for s in source)
            if not ok or not isinstance(own, str):
                raise self.option_error("data_map", f"entry {source!r}: {own!r} must map (sub-dataset name, its "
                                                    f"data key) to an own data key name",
                                        suggestion="e.g. 'data_map': {('am', 'data'): 'data'}")
            name, key = source
            keys = maps.setdefault(name, {})
            if own in keys:
                raise self.option_error("data_map", f"maps both ('{name}', {quoted(keys[own])}) and ('{name}', "
                                                    f"{quoted(key)}) to {quoted(own)}: a sequence of '{name}' "
                                                    f"would have two arrays for one key",
                                        suggestion="map each key of a sub-dataset to its own data key")
            keys[own] = key
        if not maps:
            raise self.option_error("data_map", "must map at least one data key",
                                    suggestion="e.g. 'data_map': {('am', 'data'): 'data'}")
        return maps

    def _merge_specs(self) -> Dict[str, DataSpec]:
        spec: Dict[str, DataSpec] = {}
        source: Dict[str, Tuple[str, str]] = {}
        for name in self._names:
            for own, key in self._maps[name].items():
                sub_spec = self.subs.check_key(name, key)
                if own not in spec:
                    spec[own], source[own] = sub_spec, (name, key)
                    continue
                first = spec[own]
                if (first.dtype, first.sparse, first.shape) != (sub_spec.dtype, sub_spec.sparse, sub_spec.shape):
                    raise self.option_error(
                        "data_map", f"maps {source[own]} and ('{name}', {quoted(key)}) to {quoted(own)}, but they "
                                    f"differ: {first} vs {sub_spec}",
                        suggestion="only data of the same dtype and frame shape can share a key")
                if first.sparse and sub_spec.dim is not None and (first.dim is None or sub_spec.dim > first.dim):
                    spec[own] = sub_spec
        for own, own_spec in spec.items():
            lacking = [n for n in self._names if own not in self._maps[n]]
            if lacking and not own_spec.has_time_axis:
                raise self.option_error("data_map", f"key {quoted(own)} has no time axis, so it cannot be empty for "
                                                    f"the sequences of {', '.join(lacking)}",
                                        suggestion=f"map a key of {', '.join(lacking)} to {quoted(own)} too")
        return dict(sorted(spec.items(), key=lambda item: (item[0] != "data", item[0])))

    def _parse_sampling_sizes(self) -> Optional[Dict[str, int]]:
        value = self.options["sampling_sizes"]
        if value is None:
            return None
        if not isinstance(value, dict):
            value = {name: value for name in self._names}
        unknown = [str(k) for k in value if k not in self._maps]
        missing = [n for n in self._names if n not in value]
        if unknown or missing:
            raise self.option_error("sampling_sizes", f"must give a size for each sub-dataset of the data_map "
                                                      f"({', '.join(self._names)})" +
                                    (f"; unknown: {', '.join(unknown)}" if unknown else "") +
                                    (f"; missing: {', '.join(missing)}" if missing else ""),
                                    suggestion="give one int for all, or a dict with every sub-dataset name")
        for name, size in value.items():
            if not is_int(size) or size < 1:
                raise self.option_error("sampling_sizes", f"entry '{name}' must be a positive int, got {size!r}",
                                        suggestion="e.g. 100")
        return {name: int(value[name]) for name in self._names}

    def _check_ordering_options(self) -> None:
        text = self.options["seq_ordering"]
        if text == "interleave":
            for key in ("partition_epoch", "repeat_epoch"):
                if self.options[key] != 1:
                    raise self.option_error(key, "cannot be combined with seq_ordering 'interleave'",
                                            suggestion="set it on the sub-datasets instead")
        if self.options["interleave_gumbel_scale"] is not None and text != "interleave":
            raise self.option_error("interleave_gumbel_scale", f"has no effect with seq_ordering {text!r}",
                                    suggestion="remove it, or set seq_ordering 'interleave'")
        if self._sampling is not None:
            if text in SPECIAL_ORDERINGS:
                raise self.option_error("sampling_sizes", f"cannot be combined with seq_ordering {text!r}",
                                        suggestion="use e.g. 'random' to mix the sampled sequences")
            if self.options["partition_epoch"] != 1:
                raise self.option_error("partition_epoch", "cannot be combined with 'sampling_sizes'",
                                        suggestion="choose smaller sampling_sizes instead")

    # -- the corpus: sub-dataset corpora one after the other ------------------------------

    def data_spec(self) -> Dict[str, DataSpec]:
        return dict(self._spec)

    def _locate(self, corpus_index: int) -> Tuple[str, int]:
        position, sub_index = self._parts.locate(corpus_index)
        return self._names[position], sub_index

    def _num_corpus_seqs(self) -> int:
        return self._parts.total

    def _corpus_seq(self, corpus_index: int) -> Dict[str, np.ndarray]:
        name, sub_index = self._locate(corpus_index)
        arrays = self.subs[name]._corpus_seq(sub_index)
        keys = self._maps[name]
        return {own: (arrays[keys[own]] if own in keys else
                      np.zeros((0,) + spec.frame_shape, dtype=spec.dtype)) for own, spec in self._spec.items()}

    def _corpus_seq_length(self, corpus_index: int) -> Dict[str, int]:
        name, sub_index = self._locate(corpus_index)
        lengths = self.subs[name]._corpus_seq_length(sub_index)
        keys = self._maps[name]
        return {own: (lengths[keys[own]] if own in keys else 0) for own, spec in self._spec.items()
                if spec.has_time_axis}

    def _corpus_seq_tag(self, corpus_index: int) -> str:
        name, sub_index = self._locate(corpus_index)
        return self.subs[name]._corpus_seq_tag(sub_index)

    def _corpus_seq_source(self, corpus_index: int) -> Tuple[str, str]:
        name, sub_index = self._locate(corpus_index)
        return self.subs[name]._corpus_seq_source(sub_index)

    def _sort_length(self, corpus_index: int) -> int:
        """What joint sorting sorts by: the length of the sub-dataset's own sort key ("data" if it has it)."""
        name, sub_index = self._locate(corpus_index)
        dataset = self.subs[name]
        key = dataset.sort_key()
        return 0 if key is None else int(dataset._corpus_seq_length(sub_index)[key])

    # -- epochs ---------------------------------------------------------------------------

    def init_epoch(self, epoch: int) -> None:
        self.epoch = checked_epoch(self, epoch)
        pools = []
        for position, name in enumerate(self._names):
            dataset = self.subs[name]
            dataset.init_epoch(sub_epoch(self, self.epoch))
            local = np.array([dataset.corpus_index(i) for i in range(dataset.num_seqs())], dtype=np.int64)
            pools.append(local + self._parts.start(position))
        if self.subs.content_changed():
            self._checked.clear()
        text = self.options["seq_ordering"]
        if text == "interleave":
            order = self._interleave(pools)
        elif self._sampling is not None:
            order = self._ordered(self._sample(pools), partition=False)
        elif text == "random_dataset":
            order = self._repeat(self._partition(self._random_dataset(pools)))
        else:
            order = self._ordered(np.concatenate(pools), partition=True)
        self._order = np.asarray(order, dtype=np.int64)

    def _ordered(self, pool: np.ndarray, partition: bool) -> np.ndarray:
        """`pool` (corpus indices) in the order of `seq_ordering`, partitioned and repeated."""
        ordering = self.ordering
        lengths = np.array([self._sort_length(int(i)) for i in pool], dtype=np.int64) \
            if ordering.needs_lengths else None
        positions = make_seq_order(ordering, len(pool), lengths=lengths,
                                   seed=self.random_seed(self.epoch, ordering.num_epochs_fixed))
        order = pool[positions]
        return self._repeat(self._partition(order) if partition else order)

    def _sample(self, pools: List[np.ndarray]) -> np.ndarray:
        parts = []
        for name, pool in zip(self._names, pools):
            size = self._sampling[name]
            if len(pool) == 0:
                raise self.option_error("sampling_sizes", f"takes {size} sequences of sub-dataset '{name}', which "
                                                          f"has none in epoch {self.epoch}",
                                        suggestion=f"give datasets['{name}'] sequences or remove it from data_map")
            start = ((self.epoch - 1) * size) % len(pool)
            parts.append(pool[np.arange(start, start + size) % len(pool)])
        return np.concatenate(parts)

    def _random_dataset(self, pools: List[np.ndarray]) -> np.ndarray:
        picks = [position for position, pool in enumerate(pools) for _ in range(len(pool))]
        random.Random(self.random_seed(self.epoch)).shuffle(picks)
        used = [0] * len(pools)
        order = []
        for position in picks:
            order.append(pools[position][used[position]])
            used[position] += 1
        return np.asarray(order, dtype=np.int64)

    def _interleave(self, pools: List[np.ndarray]) -> np.ndarray:
        scale_option = self.options["interleave_gumbel_scale"]
        rng = np.random.RandomState(self.random_seed(self.epoch))
        sizes = [len(pool) for pool in pools]
        used = [0] * len(pools)
        order = []
        for _ in range(sum(sizes)):
            left = [j for j in range(len(pools)) if used[j] < sizes[j]]
            done = [min((used[j] + 1) / sizes[j], 1.0) for j in left]
            if scale_option:
                scale = 1.0 - max(done) if scale_option == "remaining" else float(scale_option)
                logits = np.log([max(sizes[j] - used[j], 1.0) for j in left])
                noise = rng.gumbel(size=len(left))
                pick = left[int(np.argmax(logits + scale * noise))]
            else:
                pick = min(zip(done, left))[1]
            order.append(pools[pick][used[pick]])
            used[pick] += 1
        return np.asarray(order, dtype=np.int64)
