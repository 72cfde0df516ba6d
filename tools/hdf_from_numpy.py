#!/usr/bin/env python3
"""Write an HDF file in RETURNN's HDFDataset layout from an .npz of per-sequence arrays.

The .npz holds one array per sequence and data key, named "<key>/<index>" ("data/0", "classes/0",
"data/1", ...) and optionally an array "seq_tags" with one name per sequence:

    python tools/hdf_from_numpy.py seqs.npz train.hdf --dim classes=10

The writing itself is `netcompiler.engine.datasets.hdf_writer.write_hdf`, importable from Python.
"""

from __future__ import annotations

import argparse
import sys
from typing import Dict, List, Optional, Sequence

import numpy as np

from netcompiler.engine.datasets.hdf_writer import write_hdf


# ---------------------------------------------------------------------------
# Command line


def load_npz_seqs(path: str) -> tuple:
    """(seqs, tags or None) from an .npz with arrays "<key>/<index>" and optional "seq_tags"."""
    with np.load(path, allow_pickle=False) as npz:
        by_key: Dict[str, Dict[int, np.ndarray]] = {}
        tags = None
        for name in npz.files:
            if name == "seq_tags":
                tags = [str(t) for t in npz[name].tolist()]
                continue
            key, _, index = name.rpartition("/")
            if not key or not index.isdigit():
                raise ValueError(f"{path}: array {name!r} is not named '<key>/<index>' (or 'seq_tags')")
            by_key.setdefault(key, {})[int(index)] = npz[name]
    if not by_key:
        raise ValueError(f"{path}: no arrays named '<key>/<index>'")
    num_seqs = max(len(v) for v in by_key.values())
    for key, per_seq in by_key.items():
        if sorted(per_seq) != list(range(num_seqs)):
            raise ValueError(f"{path}: key {key!r} needs arrays {key}/0 ... {key}/{num_seqs - 1}")
    seqs = [{key: per_seq[i] for key, per_seq in by_key.items()} for i in range(num_seqs)]
    return seqs, tags


def _key_value(text: str, what: str) -> tuple:
    key, sep, value = text.partition("=")
    if not sep or not key or not value:
        raise argparse.ArgumentTypeError(f"expected KEY={what}, got {text!r}")
    return key, value


def _parse_dim(text: str) -> tuple:
    key, value = _key_value(text, "N")
    if not value.isdigit():
        raise argparse.ArgumentTypeError(f"expected KEY=N with an integer N, got {text!r}")
    return key, int(value)


def _parse_labels(text: str) -> tuple:
    return _key_value(text, "FILE")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="Write a RETURNN-layout HDF file (for HDFDataset) from an .npz of per-sequence arrays.",
        epilog="The .npz holds one array per sequence and data key, named '<key>/<index>' "
               "(data/0, classes/0, data/1, ...), and optionally 'seq_tags'. Key 'data' becomes the "
               "HDF 'inputs'; integer arrays of shape (T,) are sparse class indices.")
    parser.add_argument("input", help=".npz file with arrays '<key>/<index>'")
    parser.add_argument("output", help="HDF file to write")
    parser.add_argument("--dim", type=_parse_dim, action="append", default=[], metavar="KEY=N",
                        help="number of classes of sparse KEY (default: largest index + 1); repeatable")
    parser.add_argument("--labels", type=_parse_labels, action="append", default=[], metavar="KEY=FILE",
                        help="label names of KEY, one per line in FILE; repeatable")
    parser.add_argument("--force", action="store_true", help="replace OUTPUT if it exists")
    return parser


def _read_label_file(path: str) -> List[str]:
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f if line.strip()]


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        seqs, tags = load_npz_seqs(args.input)
        labels = {key: _read_label_file(path) for key, path in args.labels}
        write_hdf(args.output, seqs, dims=dict(args.dim), labels=labels, tags=tags, overwrite=args.force)
    except (OSError, ValueError) as exc:
        parser.exit(2, f"{parser.prog}: error: {exc}\n")
    keys = ", ".join(f"{k} {seqs[0][k].dtype}{list(seqs[0][k].shape[1:])}" for k in sorted(seqs[0]))
    print(f"wrote {args.output}: {len(seqs)} sequences; keys: {keys}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
