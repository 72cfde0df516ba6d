"""Feeding batches to TensorFlow: an epoch's padded NumPy batches -> a prefetching `tf.data` pipeline."""

from __future__ import annotations

from typing import Iterable

import tensorflow as tf

from ..errors import ConfigError
from .batching import BatchSettings, iterate_batches


def batch_stream(dataset, keys: Iterable[str], settings: BatchSettings):
    """Python generator of (inputs, lengths) dicts for the dataset's current epoch, restricted to `keys`."""
    keys = list(keys)
    for batch in iterate_batches(dataset, settings):
        yield {key: batch.data[key] for key in keys}, {key: batch.lengths[key] for key in keys if key in batch.lengths}


def tf_batches(dataset, signature, settings: BatchSettings) -> tf.data.Dataset:
    """The current epoch's batches as a `tf.data.Dataset` that prepares the next batches while the step runs."""
    input_spec, length_spec = signature
    missing = [key for key in input_spec if key not in dataset.data_keys()]
    if missing:
        raise ConfigError(f"the network reads {', '.join(missing)}, which the dataset does not provide "
                          f"(it has: {', '.join(dataset.data_keys())})", subject=f"dataset '{dataset.name}'",
                          suggestion="check extern_data against the dataset's keys")
    generator = lambda: batch_stream(dataset, input_spec, settings)  # noqa: E731
    stream = tf.data.Dataset.from_generator(generator, output_signature=(input_spec, length_spec))
    return stream.prefetch(tf.data.AUTOTUNE)
