"""MetaDataset: several datasets describing the same sequences, matched by sequence tag (RETURNN's MetaDataset).

    train = {"class": "MetaDataset",
             "datasets": {"feat": {"class": "HDFDataset", "files": ["feat.hdf"]},
                          "align": {"class": "HDFDataset", "files": ["align.hdf"]}},
             "data_map": {"data": ("feat", "data"), "classes": ("align", "classes")},
             "seq_order_control_dataset": "feat"}

Each own data key comes from one sub-dataset (`data_map`: own key -> (sub-dataset name, its key)). The corpus is
the list of sequence tags of the *default* sub-dataset (`seq_order_control_dataset`, else the one "data" comes
from), in its corpus order, or the tags in `seq_list_file`; every other sub-dataset must have each of these tags
(checked when the dataset is built: a missing tag is an error naming the sub-dataset and the tag).

The order of an epoch: with `seq_order_control_dataset`, that sub-dataset's own `seq_ordering`,
`partition_epoch` and `repeat_epoch` decide it (the MetaDataset's own are then an error, as RETURNN ignores
them); otherwise the MetaDataset's `seq_ordering` / `partition_epoch` / `repeat_epoch`, sorting by the length of
"data". The order options of the other sub-datasets have no effect (a notice says so). With the MetaDataset's
`partition_epoch`, generated sub-datasets make the data of the full epoch (RETURNN: of the sub-epoch), so that
each full epoch has every sequence once with fixed data. Sorting uses the length of the own key "data" (RETURNN:
of the default sub-dataset's key "data"; the same when "data" maps to a key "data"). The keys keep their own
lengths: "data" from one file and "classes" from another may differ in length, as in RETURNN.

`seq_list_file`: a text file with one tag per line (also .gz), or a pickle (.pkl, .pkl.gz) holding such a list
or a dict sub-dataset name -> list of tags (entry i of each list names the same sequence). `data_dims` and
`data_dtypes` (deprecated in RETURNN) are only compared with the data.
"""

from __future__ import annotations

import gzip
import pickle
from typing import Any, Dict, List, Tuple

import numpy as np

from netcompiler.engine.datasets.base import DataSpec, Dataset, Option, checked_epoch, register
from netcompiler.engine.datasets.composite import (
    ComposedDataset,
    SubDatasets,
    check_declared,
    sub_epoch,
)
from netcompiler.errors import DataFileError, InvalidOptionError, quoted


def all_tags(dataset: Dataset) -> List[str]:
    """The tags of every corpus sequence of `dataset`, in corpus order."""
    return [dataset._corpus_seq_tag(i) for i in range(dataset.total_num_seqs())]


def load_seq_list_file(path: str) -> Any:
    """RETURNN's seq list file forms: pickle (.pkl[.gz]) of a list or dict, else text with one tag per line."""
    opener = gzip.open if path.endswith(".gz") else open
    plain = path[:-3] if path.endswith(".gz") else path
    try:
        if plain.endswith(".pkl"):
            with opener(path, "rb") as handle:
                return pickle.load(handle)
        with opener(path, "rt") as handle:
            return handle.read().splitlines()
    except (OSError, pickle.UnpicklingError, EOFError, UnicodeDecodeError) as exc:
        raise DataFileError(path, f"cannot read the seq list: {exc}") from None


@register
class MetaDataset(ComposedDataset):
    """The data keys of several sub-datasets for the same sequences, matched by tag (see the module docstring)."""

    OPTIONS = {
        "datasets": Option((dict,), required=True, doc="sub-dataset name -> dataset options"),
        "data_map": Option((dict,), required=True, doc="own data key -> (sub-dataset name, its data key)"),
        "seq_list_file": Option((str,), None, doc="tags of the corpus (text or pickle), see the module docstring"),
        "seq_order_control_dataset": Option((str,), None, doc="the sub-dataset whose order every epoch uses"),
        "data_dims": Option((dict,), None, doc="RETURNN, deprecated: only compared with the data"),
        "data_dtypes": Option((dict,), None, doc="RETURNN, deprecated: only compared with the data"),
    }
    REFUSED = {"seq_lens_file": "the lengths are read from the sub-datasets; remove the option"}

    def __init__(self, name: str = "dataset", **opts: Any):
        for key, suggestion in self.REFUSED.items():
            if key in opts:
                raise InvalidOptionError(f"option '{key}' of RETURNN's MetaDataset is not supported by netcompiler",
                                         subject=f"dataset '{name}'", option=key, suggestion=suggestion)
        super().__init__(name, **opts)
        self._map = self._parse_data_map()
        control = self.options["seq_order_control_dataset"]
        if control is None and "data" not in self._map:
            raise self.option_error("data_map", f"has no 'data' entry (keys: {', '.join(self._map)}), so it is "
                                                f"not clear which sub-dataset decides the order",
                                    suggestion="set 'seq_order_control_dataset' to one of the sub-datasets")
        used = [name for name, _ in self._map.values()]
        if control is not None and control not in used:
            if control not in self.options["datasets"]:
                raise self.option_error("seq_order_control_dataset", f"names {quoted(control)}, which 'datasets' "
                                        f"does not have (it has: {', '.join(map(str, self.options['datasets']))})",
                                        suggestion="name one of the sub-datasets in 'datasets'")
            used.append(control)
        self.subs = SubDatasets(self, used)
        self.default = control if control is not None else self._map["data"][0]
        self._check_control_options()
        self._spec = {key: self.subs.check_key(name, sub_key) for key, (name, sub_key) in self._map.items()}
        check_declared(self, self._spec)
        self.labels = self.subs.labels_of((key, name, sub_key) for key, (name, sub_key) in self._map.items())
        self._tags = self._seq_lists()
        # corpus index -> corpus index in each sub-dataset
        self._sub_index = {name: self._index_by_tag(name, tags) for name, tags in self._tags.items()}
        self._tag_index = {tag: i for i, tag in enumerate(self._tags[self.default])}

    # -- options ----------------------------------------------------------------------

    def _parse_data_map(self) -> Dict[str, Tuple[str, str]]:
        parsed = {}
        for key, target in self.options["data_map"].items():
            if isinstance(key, tuple):
                raise self.option_error("data_map", f"has the key {key!r}: a MetaDataset maps own data key -> "
                                                    f"(sub-dataset name, its key)",
                                        suggestion="the form (sub-dataset, key) -> own key is CombinedDataset's")
            ok = isinstance(target, (tuple, list)) and len(target) == 2 and all(isinstance(t, str) for t in target)
            if not isinstance(key, str) or not ok:
                raise self.option_error("data_map", f"entry {key!r}: {target!r} must map a data key name to "
                                                    f"(sub-dataset name, its data key)",
                                        suggestion="e.g. 'data_map': {'data': ('feat', 'data')}")
            parsed[key] = (target[0], target[1])
        if not parsed:
            raise self.option_error("data_map", "must map at least one data key",
                                    suggestion="e.g. 'data_map': {'data': ('feat', 'data')}")
        return dict(sorted(parsed.items()))  # RETURNN's get_data_keys order

    def _check_control_options(self) -> None:
        control = self.options["seq_order_control_dataset"]
        if control is not None:
            for key in ("seq_ordering", "partition_epoch", "repeat_epoch"):
                if self.options[key] != self.all_options()[key].default:
                    raise self.option_error(key, f"has no effect with seq_order_control_dataset '{control}': that "
                                                 f"sub-dataset decides the order",
                                            suggestion=f"set it in datasets['{control}'] instead")
        why = (f"the order comes from '{control}'" if control is not None else
               "the MetaDataset's own seq_ordering/partition_epoch decide the order")
        self.subs.notice_ignored_order([name for name, _ in self.subs.items() if name != control], why)

    # -- the corpus: tags ----------------------------------------------------------------

    def _seq_lists(self) -> Dict[str, List[str]]:
        """Sub-dataset name -> tags of the corpus in it (entry i of every list names corpus sequence i)."""
        path = self.options["seq_list_file"]
        if path is None:
            tags = all_tags(self.subs[self.default])
            return {name: tags for name, _ in self.subs.items()}
        content = load_seq_list_file(path)
        if isinstance(content, list):
            content = {name: content for name, _ in self.subs.items()}
        if not isinstance(content, dict):
            raise DataFileError(path, f"must hold a list of tags or a dict sub-dataset -> tags, "
                                      f"got {type(content).__name__}")
        missing = [name for name, _ in self.subs.items() if name not in content]
        if missing:
            raise DataFileError(path, f"has no list of tags for the sub-dataset(s) {', '.join(missing)}")
        num = len(content[self.default])
        for name, _ in self.subs.items():
            if len(content[name]) != num:
                raise DataFileError(path, f"has {len(content[name])} tags for '{name}', but {num} for "
                                          f"'{self.default}': entry i of each list must name the same sequence")
        if num == 0:
            raise DataFileError(path, "lists no sequence")
        return {name: [str(t) for t in content[name]] for name, _ in self.subs.items()}

    def _index_by_tag(self, name: str, tags: List[str]) -> np.ndarray:
        dataset = self.subs[name]
        index: Dict[str, int] = {}
        for i, tag in enumerate(all_tags(dataset)):
            index.setdefault(tag, i)
        found = [index.get(tag, -1) for tag in tags]
        missing = [tag for tag, i in zip(tags, found) if i < 0]
        if missing:
            source = (f"the seq list '{self.options['seq_list_file']}'" if self.options["seq_list_file"]
                      else f"sub-dataset '{self.default}'")
            raise self.option_error(
                "datasets", f"sub-dataset '{name}' has no sequence with the tag {quoted(missing[0])}"
                            + (f" ({len(missing)} of {len(tags)} tags missing)" if len(missing) > 1 else "")
                            + f", which {source} has",
                suggestion="the sub-datasets must describe the same sequences; give a seq_list_file that maps the "
                           "tags if they are named differently")
        return np.asarray(found, dtype=np.int64)

    # -- the corpus: data ----------------------------------------------------------------

    def data_spec(self) -> Dict[str, DataSpec]:
        return dict(self._spec)

    def _num_corpus_seqs(self) -> int:
        return len(self._tags[self.default])

    def _corpus_seq_tag(self, corpus_index: int) -> str:
        return self._tags[self.default][corpus_index]

    def _by_sub(self) -> Dict[str, List[Tuple[str, str]]]:
        grouped: Dict[str, List[Tuple[str, str]]] = {}
        for key, (name, sub_key) in self._map.items():
            grouped.setdefault(name, []).append((key, sub_key))
        return grouped

    def _corpus_seq(self, corpus_index: int) -> Dict[str, np.ndarray]:
        arrays = {}
        for name, keys in self._by_sub().items():
            sub_arrays = self.subs[name]._corpus_seq(int(self._sub_index[name][corpus_index]))
            arrays.update({key: sub_arrays[sub_key] for key, sub_key in keys})
        return {key: arrays[key] for key in self._map}

    def _corpus_seq_length(self, corpus_index: int) -> Dict[str, int]:
        lengths = {}
        for name, keys in self._by_sub().items():
            sub_lengths = self.subs[name]._corpus_seq_length(int(self._sub_index[name][corpus_index]))
            lengths.update({key: sub_lengths[sub_key] for key, sub_key in keys if sub_key in sub_lengths})
        return lengths

    def _sort_lengths(self) -> np.ndarray:
        key = self.sort_key()
        if key is None:
            return np.zeros(self._num_corpus_seqs(), dtype=np.int64)
        name, sub_key = self._map[key]
        dataset = self.subs[name]
        return np.array([dataset._corpus_seq_length(int(i))[sub_key] for i in self._sub_index[name]], dtype=np.int64)

    def check_seq(self, corpus_index: int, arrays: Dict[str, np.ndarray]) -> None:
        """The base class's data checks, one sub-dataset at a time: a message names the file the bad data are in."""
        try:
            for name, keys in self._by_sub().items():
                self._checking = name
                super().check_seq(corpus_index, {key: arrays[key] for key, _ in keys})
        finally:
            self._checking = None

    def _corpus_seq_source(self, corpus_index: int) -> Tuple[str, str]:
        name = getattr(self, "_checking", None) or self.default
        return self.subs[name]._corpus_seq_source(int(self._sub_index[name][corpus_index]))

    # -- epochs --------------------------------------------------------------------------

    def _prepare_epoch(self, epoch: int) -> None:
        for name, dataset in self.subs.items():
            if name != self.options["seq_order_control_dataset"]:
                dataset._prepare_epoch(sub_epoch(self, epoch))  # generated content of this epoch; the order is ours
        if self.subs.content_changed():
            self._checked.clear()

    def init_epoch(self, epoch: int) -> None:
        control = self.options["seq_order_control_dataset"]
        if control is None:
            super().init_epoch(epoch)
            return
        self.epoch = checked_epoch(self, epoch)
        dataset = self.subs[control]
        dataset.init_epoch(self.epoch)
        self._prepare_epoch(self.epoch)
        order = []
        for index in range(dataset.num_seqs()):
            tag = dataset.seq_tag(index)
            if tag not in self._tag_index:
                raise DataFileError(str(self.options["seq_list_file"]),
                                    f"has no tag {quoted(tag)}, which the seq_order_control_dataset '{control}' "
                                    f"has in epoch {self.epoch}")
            order.append(self._tag_index[tag])
        self._order = np.asarray(order, dtype=np.int64)
