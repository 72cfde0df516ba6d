"""What MetaDataset and CombinedDataset share: datasets made of named sub-datasets.

`SubDatasets` builds the sub-datasets from the `datasets` option (only those
the `data_map` uses, as RETURNN does; the others are named in a notice), checks
that a `data_map` entry names a known sub-dataset and one of its data keys, and
keeps the per-sequence data checks in step with generated sub-datasets whose
content changes per epoch.

Sub-dataset `x` of dataset `train` is named `train/x` in messages.
"""

from __future__ import annotations

import sys
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

from netcompiler.engine.datasets.base import DataSpec, Dataset, parse_data_dims
from netcompiler.errors import closest_match, quoted

# A sub-dataset's options that the owner overrides (its order comes from the owner), with what to do.
ORDER_OPTIONS = ("seq_ordering", "partition_epoch", "repeat_epoch")


def sub_epoch(owner: Dataset, epoch: int) -> int:
    """The epoch the sub-datasets of `owner` make for its `epoch`: with partition_epoch, the full epoch, so that the
    sub-epochs are parts of one fixed order over the same data (RETURNN passes the sub-epoch itself, whose new
    seeds let a generated sub-dataset's data change between the parts)."""
    return (epoch - 1) // owner.options["partition_epoch"] + 1


def notice(owner: Dataset, text: str) -> None:
    """A one-line notice about a setting that has no effect (stderr: not an error, the run goes on)."""
    print(f"notice: {owner.subject}: {text}", file=sys.stderr)


class SubDatasets:
    """The sub-datasets of `owner`, by name, built from its `datasets` option.

    `used` are the names the data_map refers to (in the order first used);
    every one must be in `datasets`.
    """

    def __init__(self, owner: Dataset, used: Iterable[str], *, map_option: str = "data_map"):
        from netcompiler.engine.datasets import make_dataset  # the package registers every class

        self.owner = owner
        opts = owner.options["datasets"]
        if not isinstance(opts, Mapping) or not opts:
            raise owner.option_error("datasets", f"must be a non-empty dict name -> dataset options, got {opts!r}")
        used = list(dict.fromkeys(used))
        for name in used:
            if name not in opts:
                match = closest_match(name, [str(k) for k in opts])
                raise owner.option_error(
                    map_option, f"names the sub-dataset {quoted(name)}, which 'datasets' does not have "
                                f"(it has: {', '.join(map(str, opts))})",
                    suggestion=f"did you mean '{match}'?" if match else "add it to 'datasets' or fix the name")
        unused = [str(k) for k in opts if k not in used]
        if unused:
            notice(owner, f"datasets {', '.join(unused)} are not used by '{map_option}' and are not loaded")
        self.datasets: Dict[str, Dataset] = {}
        for name in used:
            sub_opts = opts[name]
            if isinstance(sub_opts, Dataset):
                self.datasets[name] = sub_opts
            else:
                self.datasets[name] = make_dataset(sub_opts, f"{owner.name}/{name}")
        self._content_seeds: Optional[Tuple[Any, ...]] = None

    def __getitem__(self, name: str) -> Dataset:
        return self.datasets[name]

    def items(self):
        """(name, dataset) pairs."""
        return self.datasets.items()

    def check_key(self, name: str, key: Any, option: str = "data_map") -> DataSpec:
        """The spec of data key `key` of sub-dataset `name`; an error naming `option` if it has no such key."""
        spec = self.datasets[name].data_spec()
        if key not in spec:
            match = closest_match(str(key), spec)
            raise self.owner.option_error(
                option, f"maps the data key {quoted(key)} of sub-dataset '{name}', which it does not have "
                        f"(it has: {', '.join(spec)})", suggestion=f"did you mean '{match}'?" if match else None)
        return spec[key]

    def notice_ignored_order(self, names: Iterable[str], why: str) -> None:
        """A notice for each order option set on the sub-datasets `names` (the owner decides their order)."""
        opts = self.owner.options["datasets"]
        for name in names:
            sub_opts = opts[name] if isinstance(opts[name], Mapping) else {}
            ignored = [key for key in ORDER_OPTIONS if sub_opts.get(key) not in (None, "default", 1)]
            if ignored:
                notice(self.owner, f"{', '.join(ignored)} of sub-dataset '{name}' has no effect: {why}")

    def content_changed(self) -> bool:
        """Whether the content of a generated sub-dataset changed since the last call (call after preparing the
        epoch): the owner's already checked sequences must be checked again."""
        seeds = tuple(getattr(dataset, "_content_seed_now", None) for dataset in self.datasets.values())
        changed = seeds != self._content_seeds
        self._content_seeds = seeds
        return changed

    def labels_of(self, pairs: Iterable[Tuple[str, str, str]]) -> Dict[str, List[str]]:
        """Label names per own data key, from (own key, sub-dataset name, its key) triples."""
        labels: Dict[str, List[str]] = {}
        for own_key, name, key in pairs:
            names = self.datasets[name].labels.get(key)
            if names is not None:
                labels[own_key] = list(names)
        return labels

    def close(self) -> None:
        """Close the sub-datasets that hold files."""
        for dataset in self.datasets.values():
            close = getattr(dataset, "close", None)
            if close is not None:
                close()


def check_declared(owner: Dataset, spec: Mapping[str, DataSpec]) -> None:
    """The `data_dims` / `data_dtypes` options (RETURNN: deprecated, only to double-check) against `spec`."""
    if owner.options.get("data_dims") is not None:
        try:
            dims = parse_data_dims(owner.options["data_dims"])
        except ValueError as exc:
            raise owner.option_error("data_dims", str(exc)) from None
        for key, (dim, ndim) in dims.items():
            if key not in spec:
                raise owner.option_error("data_dims", f"names the data key {quoted(key)}, which the data_map does not "
                                                      f"define (keys: {', '.join(spec)})",
                                        suggestion="name the own data keys of the data_map, or remove 'data_dims'")
            have = (spec[key].dim, len(spec[key].shape))
            if (dim, ndim) != have:
                raise owner.option_error("data_dims", f"says {quoted(key)} is {(dim, ndim)} (dim, ndim), but the "
                                                      f"sub-dataset gives {have}", suggestion="remove 'data_dims'")
    for key, dtype in (owner.options.get("data_dtypes") or {}).items():
        if key in spec and str(dtype) != spec[key].dtype:
            raise owner.option_error("data_dtypes", f"says {quoted(key)} is {dtype}, but the sub-dataset gives "
                                                    f"{spec[key].dtype}", suggestion="remove 'data_dtypes'")


class ComposedDataset(Dataset):
    """Base of the datasets made of sub-datasets (`self.subs`): closing closes theirs."""

    subs: SubDatasets

    def close(self) -> None:
        """Close the sub-datasets' files."""
        if "subs" in self.__dict__:
            self.subs.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown: nothing useful to do
            pass
