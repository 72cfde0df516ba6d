"""Activation functions by the names configs use ("relu", "tanh", ...), shared by every layer with an
`activation` option. Names can be chained with "+" ("relu+dropout" is not one; "exp+log" applies exp, then log).
As in RETURNN, a link of the chain may also be two operands joined by "-", "*" or "/" (the first of these it
contains, in that order), each a number or again such a term: "2*sigmoid" is 2 * sigmoid(x), "1-tanh" is
1 - tanh(x)."""

from netcompiler import frontend as rf
from netcompiler.errors import InvalidOptionError, closest_match

ACTIVATION_NAMES = frozenset({
    "identity", "linear", "relu", "relu6", "elu", "selu", "gelu", "gelu_tanh", "leaky_relu", "tanh", "sigmoid",
    "log_sigmoid", "softmax", "log_softmax", "softplus", "softsign", "swish", "silu", "exp", "log", "abs",
    "square", "sqrt", "rsqrt", "sin", "cos", "erf", "sign", "negative", "reciprocal",
})

# Activations that normalise over the feature axis (they need one).
FEATURE_WISE = frozenset({"softmax", "log_softmax"})


# Operators a link may join two operands with, in the order RETURNN looks for them ("+" chains here).
_OPERATORS = "-*/"


def _operands(term: str):
    """(operator, left, right) of a binary term, else None."""
    for op in _OPERATORS:
        if op in term:
            left, right = term.split(op, 1)
            return op, left.strip(), right.strip()
    return None


def _number(text: str):
    try:
        return float(text)
    except ValueError:
        return None


def _check_term(term: str, layer: str, option: str, whole) -> None:
    split = _operands(term)
    if split is None:
        if term in ACTIVATION_NAMES:
            return
        if _number(term) is not None:
            raise InvalidOptionError(f"activation {whole!r}: '{term}' is a number where an activation is expected "
                                     f"('+' chains activations: \"exp+log\" is log(exp(x)))", layer=layer,
                                     option=option, suggestion="write a factor with '*' (\"2*sigmoid\")")
        guess = closest_match(term, ACTIVATION_NAMES)
        raise InvalidOptionError(f"unknown activation '{term}'", layer=layer, option=option,
                                 suggestion=f"did you mean '{guess}'?" if guess else
                                 f"known: {', '.join(sorted(ACTIVATION_NAMES))}")
    op, left, right = split
    if not left or not right:
        raise InvalidOptionError(f"activation {whole!r}: '{op}' in '{term}' needs an operand on each side",
                                 layer=layer, option=option, suggestion="e.g. \"2*sigmoid\"")
    if _number(left) is not None and _number(right) is not None:
        raise InvalidOptionError(f"activation {whole!r}: '{term}' has no activation in it, only numbers",
                                 layer=layer, option=option, suggestion="e.g. \"2*sigmoid\"")
    for side in (left, right):
        if _number(side) is None:
            _check_term(side, layer, option, whole)


def check_activation(name, layer: str, option: str = "activation") -> None:
    """Raises an InvalidOptionError naming the layer if `name` is not a known activation (chain)."""
    if name is None:
        return
    for part in str(name).split("+"):
        _check_term(part.strip(), layer, option, name)


def _apply_term(x: rf.Tensor, term: str) -> rf.Tensor:
    split = _operands(term)
    if split is None:
        if term in FEATURE_WISE:
            return rf.softmax(x, axis=x.feature_dim, use_mask=False, log=term == "log_softmax")
        return x if term == "linear" else rf.activation(x, term)
    op, left, right = split
    a, b = (_number(side) if _number(side) is not None else _apply_term(x, side) for side in (left, right))
    return a - b if op == "-" else a * b if op == "*" else a / b


def activate(x: rf.Tensor, name) -> rf.Tensor:
    """`x` through the activation (chain) `name` (None: unchanged); softmax and log_softmax normalise over
    `x`'s feature dim."""
    if name is None:
        return x
    for part in name.split("+"):
        x = _apply_term(x, part.strip())
    return x
