"""`--task forward` for a frontend config: the default output that `forward_step` marks, for every sequence of
a dataset, written to an HDF file in RETURNN's layout (as for layer-dict configs, `forwarding.py`)."""

from __future__ import annotations

from typing import Optional

from .. import frontend as rf
from ..errors import ConfigError
from ..tensor import Dim, Tensor


def _sequence_dim(output: Tensor) -> Optional[Dim]:
    """The dynamic dim that an output's sequences run along (its time dim, else its first dynamic dim)."""
    if output.time_dim is not None and output.time_dim.is_dynamic:
        return output.time_dim
    return next((d for d in output.dims if d.is_dynamic and not d.is_batch), None)


def forward_frontend_to_hdf(model, dataset, output_file: str, batching) -> int:
    """Runs `model.forward_outputs` on each batch of `dataset` (whole sequences) and writes the default output
    per sequence (padding removed: batch first, then its sequence dim); returns the number of sequences."""
    from .datasets.hdf_writer import write_hdf
    from .feeding import batch_stream

    backend = model.backend
    keys = [k for k in model.input_keys() if k in dataset.data_keys()]
    seqs = []
    dataset.init_epoch(1)
    for inputs, lengths in batch_stream(dataset, keys, batching.whole_sequences()):  # uncut, as RETURNN forwards
        run = model.forward_outputs(inputs, lengths)
        output = run.outputs["output"]
        if output.data.batch_dim_axis is None:
            raise ConfigError(f"the default output {output.data.describe()} has no batch dim to split into "
                              f"sequences", subject="config key 'forward_step'")
        seq_dim = _sequence_dim(output)
        order = [d for d in output.dims if d.is_batch] + ([seq_dim] if seq_dim is not None else []) + \
            [d for d in output.dims if not d.is_batch and d != seq_dim]
        with run:
            values = backend.to_numpy(rf.permute(output, order).raw)
            sizes = backend.to_numpy(run.size(seq_dim).raw) if seq_dim is not None else None
        for row in range(values.shape[0]):
            seqs.append({"data": values[row, :sizes[row]] if sizes is not None else values[row]})
    write_hdf(output_file, seqs, tags=[dataset.seq_tag(i) for i in range(len(seqs))], overwrite=True)
    return len(seqs)
