"""Activation functions by the names configs use ("relu", "tanh", ...), shared by every layer with an
`activation` option. Names can be chained with "+" ("relu+dropout" is not one; "exp+log" applies exp, then log)."""

from netcompiler import frontend as rf
from netcompiler.errors import InvalidOptionError, closest_match

ACTIVATION_NAMES = frozenset({
    "identity", "linear", "relu", "relu6", "elu", "selu", "gelu", "gelu_tanh", "leaky_relu", "tanh", "sigmoid",
    "log_sigmoid", "softmax", "log_softmax", "softplus", "softsign", "swish", "silu", "exp", "log", "abs",
    "square", "sqrt", "rsqrt", "sin", "cos", "erf", "sign", "negative", "reciprocal",
})

# Activations that normalise over the feature axis (they need one).
FEATURE_WISE = frozenset({"softmax", "log_softmax"})


def check_activation(name, layer: str, option: str = "activation") -> None:
    """Raises an InvalidOptionError naming the layer if `name` is not a known activation (chain)."""
    if name is None:
        return
    for part in str(name).split("+"):
        if part not in ACTIVATION_NAMES:
            guess = closest_match(part, ACTIVATION_NAMES)
            raise InvalidOptionError(f"unknown activation '{part}'", layer=layer, option=option,
                                     suggestion=f"did you mean '{guess}'?" if guess else
                                     f"known: {', '.join(sorted(ACTIVATION_NAMES))}")


def activate(x: rf.Tensor, name) -> rf.Tensor:
    """`x` through the activation (chain) `name` (None: unchanged); softmax and log_softmax normalise over
    `x`'s feature dim."""
    if name is None:
        return x
    for part in name.split("+"):
        if part in FEATURE_WISE:
            x = rf.softmax(x, axis=x.feature_dim, use_mask=False, log=part == "log_softmax")
        elif part != "linear":
            x = rf.activation(x, part)
    return x
