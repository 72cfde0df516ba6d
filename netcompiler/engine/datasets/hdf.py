"""HDFDataset: reads the HDF5 layout of RETURNN's HDFDataset (described, written and read file by file in
`netcompiler.hdf_format`); several files are concatenated.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Tuple

import numpy as np

from netcompiler.engine.datasets.base import DataSpec, Dataset, Option, register
from netcompiler.engine.datasets.consecutive import ConsecutiveParts
from netcompiler.errors import DataFileError
from netcompiler.hdf_format import reading
from netcompiler.hdf_format.reading import PLACEHOLDER_LABEL, open_hdf  # noqa: F401  (public names kept here)


class HDFFile(reading.HDFFile):
    """One RETURNN HDF file (see `netcompiler.hdf_format.reading.HDFFile`), with the spec of each numeric data key
    as the engine batches it (`spec`)."""

    def _read_layout(self) -> None:
        super()._read_layout()
        self.spec: Dict[str, DataSpec] = {key: DataSpec.for_sequences(s.frame_shape, s.dtype, dim=s.dim)
                                          for key, s in self.streams.items()}


@register
class HDFDataset(Dataset):
    """Sequences from RETURNN-layout HDF files; several files are concatenated.

    Every file must have the data keys of the first file, with the same specs
    (extra keys in later files are ignored, as in RETURNN). Files stay open
    until `close()`; data are read per sequence.
    """

    OPTIONS = {
        "files": Option((list, tuple), required=True, doc="paths of the HDF files"),
        "use_cache_manager": Option((bool,), False, doc="accepted for RETURNN compatibility; no effect"),
        "cache_byte_size": Option((int,), None, doc="accepted for RETURNN compatibility; no effect"),
    }

    def __init__(self, name: str = "dataset", **opts: Any):
        super().__init__(name, **opts)
        paths = self._check_paths()
        self._files: List[HDFFile] = []
        try:
            for path in paths:
                self._files.append(HDFFile(path))
            self._spec = self._merge_specs()
        except DataFileError:
            self.close()
            raise
        self.labels = dict(self._files[0].labels)
        self._parts = ConsecutiveParts([f.num_seqs for f in self._files])

    def _check_paths(self) -> List[str]:
        paths = self.options["files"]
        if not paths:
            raise self.option_error("files", "must list at least one file")
        for path in paths:
            if not isinstance(path, (str, os.PathLike)):
                raise self.option_error("files", f"must be a list of paths, got an entry {path!r}")
        return [os.fspath(p) for p in paths]

    def _merge_specs(self) -> Dict[str, DataSpec]:
        first = self._files[0]
        for other in self._files[1:]:
            for key, spec in first.spec.items():
                if key not in other.spec:
                    raise DataFileError(other.path, f"has no data key '{key}', which '{first.path}' has")
                if other.spec[key] != spec:
                    raise DataFileError(other.path, f"data key '{key}' is {other.spec[key]}, "
                                                    f"but in '{first.path}' it is {spec}")
        return dict(first.spec)

    def close(self) -> None:
        """Close all files."""
        for hdf_file in getattr(self, "_files", []):
            hdf_file.close()

    def __enter__(self) -> "HDFDataset":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown: nothing useful to do
            pass

    def data_spec(self) -> Dict[str, DataSpec]:
        return dict(self._spec)

    def _locate(self, corpus_index: int) -> Tuple[HDFFile, int]:
        file_index, seq = self._parts.locate(corpus_index)
        return self._files[file_index], seq

    def _num_corpus_seqs(self) -> int:
        return self._parts.total

    def _corpus_seq(self, corpus_index: int) -> Dict[str, np.ndarray]:
        hdf_file, seq = self._locate(corpus_index)
        return hdf_file.read(seq, list(self._spec))

    def _corpus_seq_length(self, corpus_index: int) -> Dict[str, int]:
        hdf_file, seq = self._locate(corpus_index)
        return hdf_file.lengths(seq, list(self._spec))

    def _sort_lengths(self) -> np.ndarray:
        key = self.sort_key()
        return np.concatenate([hdf_file.all_lengths(key) for hdf_file in self._files])

    def _corpus_seq_tag(self, corpus_index: int) -> str:
        hdf_file, seq = self._locate(corpus_index)
        return hdf_file.tag(seq)

    def _corpus_seq_source(self, corpus_index: int) -> Tuple[str, str]:
        hdf_file, seq = self._locate(corpus_index)
        return f"data file '{hdf_file.path}'", f"sequence {seq}"
