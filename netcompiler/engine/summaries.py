"""The per-epoch TensorBoard scalars of training (scores, learning rate), written by `scalar_writer`.

On TensorFlow through `tf.summary` (as always); on PyTorch as the same event file without TensorFlow: records
of `tensorboard`'s protobufs (a dependency), each scalar a float tensor of the "scalars" plugin byte for
byte as `tf.summary.scalar` writes it, so TensorBoard and TensorFlow's readers see the same values.
"""

from __future__ import annotations

import os
import socket
import time
from typing import Mapping

import numpy as np


class TFScalarWriter:
    """Scalars through `tf.summary` (TensorFlow backend)."""

    def __init__(self, directory: str):
        import tensorflow as tf

        self.tf = tf
        self.writer = tf.summary.create_file_writer(directory)

    def write(self, step: int, values: Mapping[str, float]) -> None:
        with self.writer.as_default(step=step):
            for name, value in values.items():
                self.tf.summary.scalar(name, value)

    def close(self) -> None:
        self.writer.close()


class EventFileScalarWriter:
    """Scalars written as a TensorBoard event file, without TensorFlow (PyTorch backend). The file is created
    with its header when the writer is made (like `tf.summary.create_file_writer`), each `write` is flushed."""

    def __init__(self, directory: str):
        from tensorboard.compat.proto import event_pb2
        from tensorboard.summary.writer.record_writer import RecordWriter

        self.event_pb2 = event_pb2
        os.makedirs(directory, exist_ok=True)
        self.path, stream = _new_event_file(directory)
        self.records = RecordWriter(stream)
        self._write(event_pb2.Event(wall_time=time.time(), file_version="brain.Event:2"))

    def write(self, step: int, values: Mapping[str, float]) -> None:
        from tensorboard.compat.proto import summary_pb2, tensor_pb2, tensor_shape_pb2, types_pb2

        metadata = summary_pb2.SummaryMetadata(plugin_data=summary_pb2.SummaryMetadata.PluginData(
            plugin_name="scalars"))
        summary = summary_pb2.Summary(value=[
            summary_pb2.Summary.Value(tag=name, metadata=metadata, tensor=tensor_pb2.TensorProto(
                dtype=types_pb2.DT_FLOAT, tensor_shape=tensor_shape_pb2.TensorShapeProto(),
                tensor_content=np.array(value, "<f4").tobytes()))
            for name, value in values.items()])
        self._write(self.event_pb2.Event(wall_time=time.time(), step=int(step), summary=summary))

    def _write(self, event) -> None:
        self.records.write(event.SerializeToString())
        self.records.flush()

    def close(self) -> None:
        self.records.close()


def _new_event_file(directory: str):
    """(path, binary stream) of a new event file. Its name has the second, host and process as TensorFlow's, and a
    counter: a run resumed in the same process within the same second must not open (and empty) the file of the run
    before it, which holds that run's scalars."""
    stem = f"events.out.tfevents.{int(time.time())}.{socket.gethostname()}.{os.getpid()}"
    for count in range(1000):
        path = os.path.join(directory, f"{stem}.{count}.v2")
        try:
            return path, open(path, "xb")
        except FileExistsError:
            continue
    raise FileExistsError(f"{directory}: 1000 event files named {stem}.*.v2 exist already")


class NoScalarWriter:
    """Writes nothing (a worker other than the chief of distributed training)."""

    def write(self, step: int, values: Mapping[str, float]) -> None:
        return None

    def close(self) -> None:
        return None


def scalar_writer(backend: str, directory: str, enabled: bool = True):
    """The writer of training's scalars into `directory` for `backend` ("tensorflow" or "torch")."""
    if not enabled:
        return NoScalarWriter()
    return EventFileScalarWriter(directory) if backend == "torch" else TFScalarWriter(directory)
