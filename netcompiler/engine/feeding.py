"""Feeding batches to TensorFlow: dataset epochs -> padded NumPy batches -> a prefetching `tf.data` pipeline."""

from __future__ import annotations

from typing import Any, Dict, Iterable

import numpy as np
import tensorflow as tf

from .batching import iterate_batches


def batch_stream(dataset, epoch: int, keys: Iterable[str], batching: Dict[str, Any]):
    """Python generator of (inputs, lengths) dicts for one epoch, restricted to `keys`."""
    keys = list(keys)
    dataset.init_epoch(epoch)
    for batch in iterate_batches(dataset, **batching):
        inputs = {key: batch.data[key] for key in keys}
        lengths = {key: batch.lengths[key].astype(np.int32) for key in keys if key in batch.lengths}
        yield inputs, lengths


def tf_batches(dataset, epoch: int, signature, batching: Dict[str, Any]) -> tf.data.Dataset:
    """The epoch's batches as a `tf.data.Dataset` that prepares the next batches while the step runs."""
    input_spec, length_spec = signature
    missing = [key for key in input_spec if key not in dataset.data_keys()]
    if missing:
        from ..errors import ConfigError

        raise ConfigError(f"the network reads {', '.join(missing)}, which the dataset does not provide "
                          f"(it has: {', '.join(dataset.data_keys())})", subject=f"dataset '{dataset.name}'",
                          suggestion="check extern_data against the dataset's keys")
    generator = lambda: batch_stream(dataset, epoch, input_spec, batching)  # noqa: E731
    stream = tf.data.Dataset.from_generator(generator, output_signature=(input_spec, length_spec))
    return stream.prefetch(tf.data.AUTOTUNE)
