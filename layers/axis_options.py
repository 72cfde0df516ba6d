"""What the indexing and sequence layers check in their options: an axis (`AXIS`/`AXES` types, the one non-batch
Dim an option names), ints and lower bounds, and a constant that must fit the input's dtype."""

from netcompiler.layer_base import LayerBase
from netcompiler.limits import is_int
from netcompiler.tensor import INT_DTYPES, Data, Dim, resolve_dim

AXIS = (str, int, Dim)
AXES = AXIS + (list, tuple)


def axis_dim(layer: LayerBase, x: Data, option: str, doing: str) -> Dim:
    """The one non-batch Dim of `x` that option `option` names."""
    dim = resolve_dim(x, layer.opts[option], layer=layer.name, option=option)
    check_not_batch(layer, dim, option, doing)
    return dim


def check_not_batch(layer: LayerBase, dim: Dim, option: str, doing: str) -> None:
    if dim.is_batch:
        raise layer.error(f"cannot {doing} the batch axis (option '{option}' is {layer.opts[option]!r})",
                          option=option, suggestion="name a time, spatial or feature axis")


def int_at_least(layer: LayerBase, option: str, minimum: int) -> int:
    value = layer.opts[option]
    if value < minimum:
        raise layer.error(f"option '{option}' is {value}, but must be >= {minimum}", option=option,
                          suggestion=f"e.g. '{option}': {minimum}")
    return value


def check_fill_value(layer: LayerBase, x: Data, option: str) -> None:
    """A constant written into `x` (pad value, mask value) must fit its dtype."""
    value = layer.opts[option]
    if x.dtype in INT_DTYPES and isinstance(value, float) and not value.is_integer():
        raise layer.error(f"option '{option}' is {value}, but the input {x.describe()} has dtype {x.dtype}",
                          option=option, suggestion="use an integer value")
