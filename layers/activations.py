"""Activation functions by the names configs use ("relu", "tanh", ...), shared by every layer with an
`activation` option. Names can be chained with "+" ("relu+dropout" is not one; "exp+log" applies exp, then log)."""

from netcompiler.errors import InvalidOptionError, closest_match
from netcompiler.lazy_tf import ops, tf


def _tf_functions():
    return {
        "identity": tf.identity, "linear": tf.identity, "relu": tf.nn.relu, "relu6": tf.nn.relu6,
        "elu": tf.nn.elu, "selu": tf.nn.selu, "gelu": lambda x: tf.nn.gelu(x, approximate=False),
        "gelu_tanh": lambda x: tf.nn.gelu(x, approximate=True), "leaky_relu": tf.nn.leaky_relu,
        "tanh": tf.tanh, "sigmoid": tf.sigmoid, "log_sigmoid": tf.math.log_sigmoid,
        "softmax": tf.nn.softmax, "log_softmax": tf.nn.log_softmax, "softplus": tf.nn.softplus,
        "softsign": tf.nn.softsign, "swish": tf.nn.silu, "silu": tf.nn.silu, "exp": tf.exp, "log": tf.math.log,
        "abs": tf.abs, "square": tf.square, "sqrt": tf.sqrt, "rsqrt": tf.math.rsqrt, "sin": tf.sin,
        "cos": tf.cos, "erf": tf.math.erf, "sign": tf.sign, "negative": tf.negative,
        "reciprocal": tf.math.reciprocal,
    }


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


def activate(data, x, name):
    """`x` (laid out as the template `data`) through the activation (chain) `name` (None: unchanged). Only a
    chain with a function that normalises over the feature dim (softmax) runs with the feature axis moved last."""
    if name is None:
        return x
    if set(name.split("+")) & FEATURE_WISE and data.feature_dim_axis is not None:
        return ops.apply_on_axis(x, data.feature_dim_axis, lambda t: apply_activation(name, t))
    return apply_activation(name, x)


def apply_activation(name, x):
    """`x` passed through the activation (chain) `name`; None means identity."""
    if name is None:
        return x
    functions = _tf_functions()
    for part in name.split("+"):
        x = functions[part](x)
    return x
