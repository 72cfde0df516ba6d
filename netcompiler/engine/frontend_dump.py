"""What `dump-net` prints for a frontend config (a model as Python code): the model's parameters (names, dims,
sizes) and the losses its train_step marks on a small dummy batch, with their templates."""

from __future__ import annotations

from typing import List


def format_frontend_text(model) -> str:
    """The parameters of `model` (a FrontendModel), one per line, and the losses of one dummy train step."""
    lines: List[str] = [f"model    {type(model.model).__name__} from get_model() on backend '{model.backend.name}'"]
    total = 0
    for name, (dims, shape) in model.param_dims().items():
        count = 1
        for size in shape:
            count *= size
        total += count
        lines.append(f"  param {name} {dims} ({count})")
    for key, data in model.extern_data.items():
        lines.append(f"data:{key:<10} {data.describe()} {data.dtype}")
    for name, marked in model.probe_losses().items():
        kind = "error" if marked.as_error else "loss"
        extra = "" if marked.scale == 1.0 else f" scale {marked.scale:g}"
        extra += " normalized" if marked.use_normalized_loss else ""
        lines.append(f"{kind:<8} {name:<10} {marked.loss.data.describe()} {marked.loss.dtype}{extra}")
    lines.append(f"{len(model.params)} parameter tensors, {total} parameters")
    return "\n".join(lines)
