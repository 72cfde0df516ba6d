"""Datasets: where training and evaluation data come from.

`make_dataset({"class": "Task12AXDataset", "num_seqs": 1000}, "train")` builds
a dataset from its config dict. The classes register themselves in
`base.DATASET_CLASSES` when their modules are imported, which this package does.
"""

from __future__ import annotations

from typing import Any, Mapping

from netcompiler.engine.datasets.base import DATASET_CLASSES, DataSpec, Dataset, register
from netcompiler.engine.datasets.combined import CombinedDataset
from netcompiler.engine.datasets.dummy import DummyDataset, RandomDataset
from netcompiler.engine.datasets.generating_tasks import CopyTaskDataset, TaskNumberBaseConvertDataset
from netcompiler.engine.datasets.hdf import HDFDataset
from netcompiler.engine.datasets.meta import MetaDataset
from netcompiler.engine.datasets.static import StaticDataset
from netcompiler.engine.datasets.task12ax import Task12AXDataset
from netcompiler.errors import ConfigError, InvalidOptionError, MissingOptionError, closest_match


def dataset_class(class_name: Any, name: str) -> type:
    """The dataset class a config's "class" entry names (a name, or a Dataset subclass)."""
    subject = f"dataset '{name}'"
    if isinstance(class_name, type) and issubclass(class_name, Dataset):
        return class_name
    if not isinstance(class_name, str):
        raise InvalidOptionError(f"option 'class' must be a dataset class name, got {class_name!r}",
                                 subject=subject, option="class")
    if class_name not in DATASET_CLASSES:
        match = closest_match(class_name, DATASET_CLASSES)
        raise ConfigError(
            f"unknown dataset class '{class_name}' (known: {', '.join(sorted(DATASET_CLASSES))})",
            subject=subject, option="class", suggestion=f"did you mean '{match}'?" if match else None)
    return DATASET_CLASSES[class_name]


def make_dataset(opts: Mapping[str, Any], name: str) -> Dataset:
    """Build the dataset a config describes, e.g. {"class": "HDFDataset", "files": [...]}.

    `name` ("train", "dev", ...) names the dataset in error messages.
    """
    subject = f"dataset '{name}'"
    if not isinstance(opts, Mapping):
        raise InvalidOptionError(f"must be a dict with a 'class' entry, got {opts!r}", subject=subject)
    if "class" not in opts:
        raise MissingOptionError("needs a 'class' entry, e.g. {'class': 'HDFDataset', ...}",
                                 subject=subject, option="class")
    options = dict(opts)
    cls = dataset_class(options.pop("class"), name)
    options.pop("name", None)  # RETURNN's display name; the config key names the dataset here
    return cls(name=name, **options)


__all__ = [
    "DATASET_CLASSES",
    "CombinedDataset",
    "CopyTaskDataset",
    "DataSpec",
    "Dataset",
    "DummyDataset",
    "HDFDataset",
    "MetaDataset",
    "RandomDataset",
    "StaticDataset",
    "Task12AXDataset",
    "TaskNumberBaseConvertDataset",
    "dataset_class",
    "make_dataset",
    "register",
]
