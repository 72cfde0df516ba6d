"""`rf.Dropout`: the dropout op (`rf.dropout`) as a module, and `dropout_broadcast_default` (RETURNN's default:
a mask shared along the dims that `axis` does not name)."""

from __future__ import annotations

from typing import Optional, Sequence, Union

from ..tensor import Dim, Tensor
from .module import Module
from .nn import dropout


class Dropout(Module):
    """In training, zeroes each value with probability `drop_prob` and scales the rest by 1 / (1 - drop_prob);
    `axis`: the dim(s) the mask varies along (None: all), shared along the others."""

    def __init__(self, drop_prob: float, *, axis: Optional[Union[Dim, Sequence[Dim]]] = None):
        super().__init__()
        if not 0.0 <= drop_prob < 1.0:
            raise ValueError(f"Dropout: drop_prob must be in [0, 1), not {drop_prob!r}")
        self.drop_prob, self.axis = drop_prob, axis

    def __repr__(self):
        return f"<Dropout {self.drop_prob}>"

    def __call__(self, source: Tensor) -> Tensor:
        return dropout(source, self.drop_prob, axis=self.axis)


def dropout_broadcast_default() -> bool:
    """Whether model code should share dropout masks along the dims other than the feature dim (True, as RETURNN
    does by default)."""
    return True
