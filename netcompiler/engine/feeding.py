"""Feeding batches to TensorFlow: an epoch's padded NumPy batches -> a prefetching `tf.data` pipeline."""

from __future__ import annotations

from typing import Iterable

import tensorflow as tf

from ..errors import ConfigError, NetcompilerError
from .batching import BatchSettings, iterate_batches


def batch_stream(dataset, keys: Iterable[str], settings: BatchSettings):
    """Python generator of (inputs, lengths) dicts for the dataset's current epoch, restricted to `keys`."""
    keys = list(keys)
    for batch in iterate_batches(dataset, settings, keys):
        yield {key: batch.data[key] for key in keys}, {key: batch.lengths[key] for key in keys if key in batch.lengths}


class _Feed:
    """Iterable over a prefetching `tf.data` pipeline of the epoch's batches.

    A NetcompilerError while reading (a bad sequence, a damaged file) must reach the user as itself, not as
    a TensorFlow error with a Python traceback inside: the generator keeps it and ends the stream, and the
    iteration raises it after the batches before it. The batch with the bad sequence is never made.
    """

    def __init__(self, dataset, signature, settings: BatchSettings):
        self.dataset, self.signature, self.settings = dataset, signature, settings
        self.error = None

    def _generate(self):
        try:
            yield from batch_stream(self.dataset, self.signature[0], self.settings)
        except NetcompilerError as exc:
            self.error = exc

    def __iter__(self):
        self.error = None
        stream = tf.data.Dataset.from_generator(self._generate, output_signature=self.signature)
        yield from stream.prefetch(tf.data.AUTOTUNE)
        if self.error is not None:
            raise self.error


def check_dataset_keys(dataset, keys: Iterable[str]) -> None:
    """A ConfigError unless the dataset provides every key the network reads."""
    missing = [key for key in keys if key not in dataset.data_keys()]
    if missing:
        raise ConfigError(f"the network reads {', '.join(missing)}, which the dataset does not provide "
                          f"(it has: {', '.join(dataset.data_keys())})", subject=f"dataset '{dataset.name}'",
                          suggestion="check extern_data against the dataset's keys")


def numpy_batches(dataset, keys: Iterable[str], settings: BatchSettings):
    """The current epoch's batches as NumPy (inputs, lengths) dicts, for eager step runners (PyTorch)."""
    keys = list(keys)
    check_dataset_keys(dataset, keys)
    return batch_stream(dataset, keys, settings)


def tf_batches(dataset, signature, settings: BatchSettings) -> _Feed:
    """The current epoch's batches via a `tf.data` pipeline that prepares the next batches while the step runs;
    iterate it once per epoch. Data errors found while reading are raised as themselves (see `_Feed`)."""
    input_spec, length_spec = signature
    check_dataset_keys(dataset, input_spec)
    check_frame_shapes(dataset, {key: tuple(spec.shape[2:]) for key, spec in input_spec.items()})
    return _Feed(dataset, (input_spec, length_spec), settings)


def check_frame_shapes(dataset, frame_shapes) -> None:
    """A ConfigError unless the dataset's frames of each key have the shape the network expects (None: any size),
    e.g. a feature dim in extern_data that the data do not have (else TensorFlow fails inside the input pipeline)."""
    spec = dataset.data_spec()
    for key, expected in frame_shapes.items():
        have = spec[key].frame_shape if spec[key].has_time_axis else None
        if have is None or len(have) != len(expected):
            continue  # no time axis, or another layout: the network's own checks
        if any(e is not None and e != h for e, h in zip(expected, have)):
            raise ConfigError(f"data key '{key}' has frames of shape {have} in the dataset, but the network expects "
                              f"{tuple(expected)}", subject=f"dataset '{dataset.name}'",
                              suggestion=f"make extern_data['{key}'] match the data (dim {have[-1]})")


def inference_runner(model, fn, signature):
    """`fn(inputs, lengths)` (NumPy batches in, raw values out) for the model's backend: a `tf.function` traced
    once for `signature` on TensorFlow; run eagerly without recording gradients on PyTorch."""
    if model.backend.name == "torch":
        from .torch_trainer import inference_fn

        return inference_fn(fn)
    return tf.function(fn, input_signature=list(signature), autograph=False)
