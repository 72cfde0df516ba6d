"""Feeding batches to TensorFlow: an epoch's padded NumPy batches -> tensors, prepared by a prefetching thread."""

from __future__ import annotations

import queue
import threading
import time
from typing import Iterable

from ..errors import ConfigError
from ..lazy_tf import tf  # imported at first use: the PyTorch trainer uses `numpy_batches` only
from .batching import BatchSettings, iterate_batches
from .collector_pause import first_call_paused


def batch_stream(dataset, keys: Iterable[str], settings: BatchSettings):
    """Python generator of (inputs, lengths) dicts for the dataset's current epoch, restricted to `keys`."""
    keys = list(keys)
    for batch in iterate_batches(dataset, settings, keys):
        yield {key: batch.data[key] for key in keys}, {key: batch.lengths[key] for key in keys if key in batch.lengths}


_END = object()  # the producer's last item


class _Feed:
    """Iterable over the epoch's batches as TensorFlow tensors, prepared by a background thread while the step
    runs (the step's kernels release the GIL), up to PREFETCH groups ahead.

    The thread hands batches over in groups of GROUP_SECONDS of its work (a batch that takes longer is a group
    of its own): each hand-off wakes the consumer's thread, ~30 us, which one by one cost the 12AX demo's feed
    ~15% (its input-pipeline benchmark: 1.68-1.77M -> 2.01-2.03M frames per CPU-second).
    `tf.data.Dataset.from_generator` cost ~1.3 ms per batch (its per-element py_function), more than making a
    12AX batch (issue 12 goal 6). An error while reading (a bad sequence, a damaged file) reaches the user as
    itself after the batches before it: the producer keeps it and ends the stream. The batch with the bad
    sequence is never made. Leaving the loop early stops the producer before the dataset is used again.
    """

    PREFETCH = 4
    GROUP_SECONDS = 0.002
    """Production time after which the batches made so far are handed over (wall seconds)."""

    def __init__(self, dataset, signature, settings: BatchSettings):
        self.dataset, self.signature, self.settings = dataset, signature, settings
        self.error = None

    def _produce(self, batches: queue.Queue, stop: threading.Event) -> None:
        input_spec, length_spec = self.signature
        group, started = [], time.perf_counter()
        try:
            for inputs, lengths in batch_stream(self.dataset, input_spec, self.settings):
                group.append(({key: tf.constant(value, input_spec[key].dtype) for key, value in inputs.items()},
                              _length_tensors(lengths, length_spec)))
                if time.perf_counter() - started >= self.GROUP_SECONDS:
                    if not _put(batches, group, stop):
                        return
                    group, started = [], time.perf_counter()
        except BaseException as exc:  # noqa: BLE001 -- raised in the consumer's thread
            self.error = exc
        if group and not _put(batches, group, stop):
            return
        _put(batches, _END, stop)

    def __iter__(self):
        self.error = None
        batches, stop = queue.Queue(self.PREFETCH), threading.Event()
        producer = threading.Thread(target=self._produce, args=(batches, stop), daemon=True,
                                    name=f"batches of {self.dataset.name}")
        producer.start()
        try:
            for group in iter(batches.get, _END):
                yield from group
        finally:
            stop.set()
            producer.join()
        if self.error is not None:
            raise self.error


def _length_tensors(lengths, length_spec):
    """The lengths of a batch as tensors; keys with equal lengths (e.g. data and classes of most tasks) share one
    tensor: a conversion costs ~10-20 us, as much as batching a few 12AX sequences."""
    tensors, made = {}, []
    for key, value in lengths.items():
        dtype = length_spec[key].dtype
        tensor = next((t for array, d, t in made
                       if d == dtype and array.shape == value.shape and (array == value).all()), None)
        if tensor is None:
            tensor = tf.constant(value, dtype)
            made.append((value, dtype, tensor))
        tensors[key] = tensor
    return tensors


def _put(batches: queue.Queue, item, stop: threading.Event) -> bool:
    """Puts `item` once there is room; False (not put) if the consumer stopped first."""
    while not stop.is_set():
        try:
            batches.put(item, timeout=0.05)
            return True
        except queue.Full:
            continue
    return False


def check_dataset_keys(dataset, keys: Iterable[str]) -> None:
    """A ConfigError unless the dataset provides every key the network reads."""
    missing = [key for key in keys if key not in dataset.data_keys()]
    if missing:
        raise ConfigError(f"the network reads {', '.join(missing)}, which the dataset does not provide "
                          f"(it has: {', '.join(dataset.data_keys())})", subject=f"dataset '{dataset.name}'",
                          suggestion="check extern_data against the dataset's keys")


def numpy_batches(dataset, keys: Iterable[str], settings: BatchSettings, frame_shapes=None):
    """The current epoch's batches as NumPy (inputs, lengths) dicts, for eager step runners (PyTorch). With
    `frame_shapes` (key -> the frame shape the network expects: `extern_frame_shapes`) the data are checked
    against them first, as the TensorFlow feed checks its signature."""
    keys = list(keys)
    check_dataset_keys(dataset, keys)
    if frame_shapes is not None:
        check_frame_shapes(dataset, frame_shapes)
    return batch_stream(dataset, keys, settings)


def extern_frame_shapes(extern_data, keys: Iterable[str]):
    """Key -> the shape of one frame (after batch and time; None: any size) of each extern data template, for
    `check_frame_shapes` (the TensorFlow feed reads the same from its TensorSpecs)."""
    return {key: tuple(extern_data[key].batch_shape[2:]) for key in keys}


def tf_batches(dataset, signature, settings: BatchSettings) -> _Feed:
    """The current epoch's batches as tensors, prepared by a thread while the step runs (see `_Feed`);
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
    once for `signature` on TensorFlow (its first call with the garbage collector paused: `collector_pause`);
    run eagerly without recording gradients on PyTorch."""
    if model.backend.name == "torch":
        from .torch_trainer import inference_fn

        return inference_fn(fn)
    return first_call_paused(tf.function(fn, input_signature=list(signature), autograph=False))
