"""The template of several layers' outputs concatenated on their feature dims (a layer's input with several
sources in 'from')."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from .errors import DimMismatchError, InvalidOptionError
from .tensor import Data, concat_dims

if TYPE_CHECKING:  # pragma: no cover
    from .layer_base import LayerBase


def concat_sources_template(sources: Sequence[LayerBase], name: str) -> Data:
    """The template of `sources` concatenated along their feature dims.

    All sources must have the same other dims (in any order; the first
    source's order is kept).
    """
    if not sources:
        raise InvalidOptionError("this layer needs at least one input in 'from'", layer=name, option="from",
                                 suggestion="e.g. 'from': 'data'")
    first = sources[0].output
    if len(sources) == 1:
        return first
    if first.feature_dim is None:
        raise DimMismatchError(f"cannot concatenate inputs: '{sources[0].name}' {first.describe()} has no feature dim",
                               layer=name, option="from")
    rest = set(d for d in first.dims if d != first.feature_dim)
    features = []
    for src in sources:
        data = src.output
        others = set(d for d in data.dims if d != data.feature_dim)
        if data.feature_dim is None or others != rest or data.dtype != first.dtype or data.sparse:
            raise DimMismatchError(
                f"inputs cannot be concatenated on the feature dim: '{sources[0].name}' {first.describe()} "
                f"vs '{src.name}' {data.describe()}",
                layer=name, option="from",
                suggestion="inputs must agree in every dim except the feature dim",
            )
        features.append(data.feature_dim)
    feature = concat_dims(features)
    return first.copy_replace_dim(first.feature_dim, feature, name=name)
