"""The TensorFlow backend's basic operations: values, elementwise math, layout, reductions, control flow."""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import numpy as np
import tensorflow as tf

from .graph_memo import graph_constant, graph_shape, same_shape
from .keep_mask import keep_mask
from .loop_invariant import hoisted, loop_body
from .tape_gradient import with_tape_gradient

_COMBINE = {
    "add": tf.add, "sub": tf.subtract, "mul": tf.multiply, "truediv": tf.math.truediv,
    "floordiv": tf.math.floordiv, "mod": tf.math.floormod, "pow": tf.pow, "maximum": tf.maximum,
    "minimum": tf.minimum, "logical_and": tf.logical_and, "logical_or": tf.logical_or,
    "logical_xor": tf.math.logical_xor, "squared_difference": tf.math.squared_difference,
    "divide_no_nan": tf.math.divide_no_nan,
}

_COMPARE = {
    "equal": tf.equal, "not_equal": tf.not_equal, "less": tf.less, "less_equal": tf.less_equal,
    "greater": tf.greater, "greater_equal": tf.greater_equal,
}

_ACTIVATIONS = {
    "identity": tf.identity, "relu": tf.nn.relu, "relu6": tf.nn.relu6, "elu": tf.nn.elu, "selu": tf.nn.selu,
    "gelu": lambda x: tf.nn.gelu(x, approximate=False), "gelu_tanh": lambda x: tf.nn.gelu(x, approximate=True),
    "leaky_relu": tf.nn.leaky_relu, "tanh": tf.tanh, "sigmoid": tf.sigmoid, "log_sigmoid": tf.math.log_sigmoid,
    "softplus": tf.nn.softplus, "softsign": tf.nn.softsign, "silu": tf.nn.silu, "swish": tf.nn.silu,
    "exp": tf.exp, "log": tf.math.log, "abs": tf.abs, "square": tf.square, "sqrt": tf.sqrt,
    "rsqrt": tf.math.rsqrt, "sin": tf.sin, "cos": tf.cos, "erf": tf.math.erf, "sign": tf.sign,
    "neg": tf.negative, "negative": tf.negative, "reciprocal": tf.math.reciprocal,
    "logical_not": tf.logical_not, "floor": tf.floor, "ceil": tf.math.ceil, "round": tf.round,
    "is_finite": tf.math.is_finite, "log1p": tf.math.log1p,
}

_REDUCE = {
    "sum": tf.reduce_sum, "mean": tf.reduce_mean, "max": tf.reduce_max, "min": tf.reduce_min,
    "prod": tf.reduce_prod, "logsumexp": tf.reduce_logsumexp, "any": tf.reduce_any, "all": tf.reduce_all,
}


def _is_bias(bias: Any, x: Any) -> bool:
    """Whether x + bias is a bias add: `bias` a float vector along x's last axis of the same static size. Its
    gradient is then one BiasAddGrad, where AddV2's broadcast gradient takes five ops."""
    raw_types = (tf.Tensor, tf.Variable)
    if not (isinstance(bias, raw_types) and isinstance(x, raw_types)) or bias.dtype != x.dtype \
            or not x.dtype.is_floating:
        return False
    b_shape, x_shape = bias.shape, x.shape
    return b_shape.rank == 1 and x_shape.rank is not None and x_shape.rank >= 2 \
        and b_shape[0] is not None and b_shape[0] == x_shape[-1]


def _is_constant(raw: Any) -> bool:
    """Whether `raw` is a graph constant (eager tensors are not: their gradient costs no tracing)."""
    return isinstance(raw, tf.Tensor) and not tf.executing_eagerly() and raw.op.type == "Const"


def _is_mask_fill(x: Any, fill: Any, cond: Any) -> bool:
    """Whether where(cond, x, fill) fills a float tensor `x` with a scalar constant where `cond` is False, and has
    x's shape: `cond` has no more axes, nor one of size > 1 where x has size 1 (the frontend gives an operand
    lacking a dim a static size 1 there; an unknown size of x is the result's)."""
    if not (isinstance(x, tf.Tensor) and x.dtype.is_floating and not _is_constant(x)
            and _is_constant(fill) and fill.shape.rank == 0):
        return False
    x_shape, c_shape = x.shape, cond.shape
    if x_shape.rank is None or c_shape.rank is None or c_shape.rank > x_shape.rank:
        return False
    x_sizes = x_shape.as_list()[x_shape.rank - c_shape.rank:]
    return all(n != 1 or c == 1 for n, c in zip(x_sizes, c_shape.as_list()))


def _masked_fill(x: Any, fill: Any, select: Callable[[Any, Any], Any]) -> Any:
    """`select(x, fill)` (a `where` of the mask with x on one side), whose gradient is `select(dy, 0)`."""
    zero = graph_constant(0.0, x.dtype)
    return with_tape_gradient("MaskedFill", lambda t: select(t, fill), x, lambda dy: select(dy, zero))


def _shape_target(raw: Any) -> Any:
    """What reshapes a tensor back to `raw`'s shape: its static shape with -1 for its one unknown size, else its
    (per graph shared) Shape."""
    known = raw.shape.as_list() if raw.shape.rank is not None else None
    if known is not None and known.count(None) <= 1 and 0 not in known:
        return graph_constant(tuple(-1 if n is None else n for n in known), tf.int32)
    return graph_shape(raw)


def _reshape(raw: Any, shape: Any) -> Any:
    """tf.reshape with a gradient that reshapes back through `_shape_target`: TF's own traces a Shape or a Const
    per reshape, two per linear layer of a chain."""
    return with_tape_gradient("Reshape", lambda x: tf.reshape(x, shape), raw,
                              lambda dy: tf.reshape(dy, _shape_target(raw)))


class CoreOps:
    """Values, elementwise math, layout, reductions and control flow on `tf.Tensor`s."""

    name = "tensorflow"

    # --- values and shapes --------------------------------------------------------------------
    @classmethod
    def is_raw(cls, value: Any) -> bool:
        return isinstance(value, (tf.Tensor, tf.Variable))

    @classmethod
    def convert_to_raw(cls, value: Any, dtype: str) -> Any:
        if isinstance(value, (tf.Tensor, tf.Variable)):
            return value if value.dtype.name == dtype else tf.cast(value, dtype)
        return tf.convert_to_tensor(np.asarray(value, dtype=dtype) if dtype != "string" else value, dtype=dtype)

    @classmethod
    def to_numpy(cls, raw: Any):
        return raw.numpy()

    @classmethod
    def dtype_name(cls, raw: Any) -> str:
        return raw.dtype.name

    @classmethod
    def get_known_shape_raw(cls, raw: Any):
        return tuple(raw.shape.as_list())

    @classmethod
    def get_shape_tuple_raw(cls, raw: Any):
        known = raw.shape.as_list()
        if all(n is not None for n in known):
            return tuple(known)
        dynamic = tf.unstack(graph_shape(raw), num=len(known))  # one op for all lengths, none left unused
        return tuple(n if n is not None else dynamic[i] for i, n in enumerate(known))

    @classmethod
    def fill_raw(cls, shape: Sequence[Any], value: Any, dtype: str) -> Any:
        if all(isinstance(n, int) for n in shape):
            return tf.constant(value, dtype=dtype, shape=list(shape)) if shape else tf.constant(value, dtype=dtype)
        return tf.fill(tf.stack([tf.cast(n, tf.int32) for n in shape]), tf.constant(value, dtype=dtype))

    @classmethod
    def range_raw(cls, limit: Any, dtype: str) -> Any:
        return tf.range(limit, dtype=dtype)

    # --- elementwise ----------------------------------------------------------------------------
    @classmethod
    def combine_raw(cls, a: Any, kind: str, b: Any) -> Any:
        if kind == "add":
            if _is_bias(a, b):
                a, b = b, a
            if _is_bias(b, a):
                added = tf.nn.bias_add(a, b)
                same_shape(added, a)
                return added
        return _COMBINE[kind](a, b)

    @classmethod
    def compare_raw(cls, a: Any, kind: str, b: Any) -> Any:
        return _COMPARE[kind](a, b)

    @classmethod
    def where_raw(cls, cond: Any, true_: Any, false_: Any) -> Any:
        # a tensor masked with a constant (padding, -inf before a softmax) gets a gradient of its own: `where` of
        # the mask, 1 op where SelectV2's broadcasting gradient takes ~14 (and pushes shapes in a loop body)
        if _is_mask_fill(true_, false_, cond):
            return _masked_fill(true_, false_, lambda kept, fill: tf.where(cond, kept, fill))
        if _is_mask_fill(false_, true_, cond):
            return _masked_fill(false_, true_, lambda kept, fill: tf.where(cond, fill, kept))
        return tf.where(cond, true_, false_)

    @classmethod
    def activation_raw(cls, raw: Any, func: str) -> Any:
        activated = _ACTIVATIONS[func](raw)
        same_shape(activated, raw)
        return activated

    @classmethod
    def cast_raw(cls, raw: Any, dtype: str) -> Any:
        return raw if raw.dtype.name == dtype else tf.cast(raw, dtype)

    @classmethod
    def clip_by_value_raw(cls, raw: Any, low: Any, high: Any) -> Any:
        return tf.clip_by_value(raw, low, high)

    @classmethod
    def stop_gradient_raw(cls, raw: Any) -> Any:
        return tf.stop_gradient(raw)

    @classmethod
    def scaled_gradient_raw(cls, raw: Any, scale: float) -> Any:
        @tf.custom_gradient
        def scaled(t):  # the value unchanged (inf too), the gradient times scale
            return tf.identity(t), lambda dy: dy * tf.cast(scale, dy.dtype)

        return scaled(raw)

    @classmethod
    def synthetic_gradient_raw(cls, raw: Any, synthetic: Any, meta_scale: float) -> Any:
        @tf.custom_gradient
        def synthetic_gradient(x, predicted):
            def grad(dy):
                size = tf.cast(tf.size(dy), dy.dtype)
                return predicted, (predicted - dy) * tf.cast(2.0 * meta_scale, dy.dtype) / size
            return tf.identity(x), grad

        return synthetic_gradient(raw, synthetic)

    @classmethod
    def host_callback_raw(cls, fn, raws: Sequence[Any]) -> Any:
        if tf.executing_eagerly():
            fn(*[r.numpy() for r in raws])
            return None

        def call(*values):
            fn(*values)
            return np.int64(0)
        return tf.numpy_function(call, list(raws), tf.int64, stateful=True)

    @classmethod
    def filtered_gradient_raw(cls, raw: Any, threshold: float, reduce_axes: Sequence[int]) -> Any:
        @tf.custom_gradient
        def filtered(t):
            def grad(dy):
                keep = tf.reduce_max(tf.square(dy), axis=list(reduce_axes), keepdims=True) < threshold
                return tf.where(keep, dy, tf.zeros_like(dy))

            return tf.identity(t), grad

        return filtered(raw)

    # --- layout ------------------------------------------------------------------------------------
    @classmethod
    def reshape_raw(cls, raw: Any, shape: Sequence[Any]) -> Any:
        if all(isinstance(n, int) for n in shape):
            return _reshape(raw, graph_constant(tuple(shape), tf.int32) if shape else [])
        return _reshape(raw, tf.stack([tf.cast(n, tf.int32) for n in shape]))

    @classmethod
    def reshape_like_raw(cls, raw: Any, like: Any) -> Any:
        known = like.shape.as_list()
        # a dynamic shape as one Shape op, from which TF also infers the static shape
        reshaped = _reshape(raw, graph_constant(tuple(known), tf.int32) if None not in known else graph_shape(like))
        same_shape(reshaped, like)
        return reshaped

    @classmethod
    def transpose_raw(cls, raw: Any, perm: Sequence[int]) -> Any:
        if list(perm) == list(range(len(perm))):
            return raw
        return hoisted(("transpose", tuple(perm)), raw, lambda r: tf.transpose(r, perm))

    @classmethod
    def expand_dims_raw(cls, raw: Any, axis: int) -> Any:
        return hoisted(("expand_dims", axis), raw, lambda r: tf.expand_dims(r, axis))

    @classmethod
    def squeeze_raw(cls, raw: Any, axes: Sequence[int]) -> Any:
        return tf.squeeze(raw, axis=list(axes)) if axes else raw

    @classmethod
    def broadcast_to_raw(cls, raw: Any, shape: Sequence[Any]) -> Any:
        if not all(isinstance(n, int) for n in shape):
            shape = tf.stack([tf.cast(n, tf.int32) for n in shape])
        return tf.broadcast_to(raw, shape)

    @classmethod
    def concat_raw(cls, raws: Sequence[Any], axis: int) -> Any:
        return raws[0] if len(raws) == 1 else tf.concat(list(raws), axis=axis)

    @classmethod
    def stack_raw(cls, raws: Sequence[Any], axis: int) -> Any:
        return tf.stack(list(raws), axis=axis)

    @classmethod
    def split_raw(cls, raw: Any, sizes: Sequence[int], axis: int):
        return tf.split(raw, list(sizes), axis=axis)

    @classmethod
    def pad_raw(cls, raw: Any, paddings, mode: str, value: Any) -> Any:
        paddings = [[left, right] for left, right in paddings]
        if mode in ("replicate", "edge"):  # the edge frame repeated (as the torch backend): gather clamped frames
            for axis, (left, right) in enumerate(paddings):
                if left or right:
                    n = tf.shape(raw)[axis]
                    raw = tf.gather(raw, tf.clip_by_value(tf.range(-left, n + right), 0, n - 1), axis=axis)
            return raw
        tf_mode = {"constant": "CONSTANT", "reflect": "REFLECT", "symmetric": "SYMMETRIC"}.get(mode)
        if tf_mode is None:
            raise ValueError(f"pad: unknown mode {mode!r}; use constant, reflect, symmetric or replicate")
        if tf_mode == "CONSTANT":
            return tf.pad(raw, paddings, constant_values=tf.cast(value, raw.dtype))
        return tf.pad(raw, paddings, mode=tf_mode)

    @classmethod
    def slice_raw(cls, raw: Any, axis: int, start: Any, end: Any, step: Any) -> Any:
        return raw[(slice(None),) * axis + (slice(start, end, step),)]

    @classmethod
    def top_k_raw(cls, raw: Any, k: int) -> Any:
        values, indices = tf.math.top_k(raw, k=k)
        return values, tf.cast(indices, tf.int32)

    @classmethod
    def gather_raw(cls, raw: Any, indices: Any, axis: int, batch_dims: int) -> Any:
        return tf.gather(raw, indices, axis=axis, batch_dims=batch_dims)

    @classmethod
    def reverse_sequence_raw(cls, raw: Any, lengths: Any, seq_axis: int, batch_axis: int) -> Any:
        return tf.reverse_sequence(raw, tf.cast(lengths, tf.int32), seq_axis=seq_axis, batch_axis=batch_axis)

    @classmethod
    def sequence_mask_raw(cls, lengths: Any, maxlen: Any) -> Any:
        return tf.sequence_mask(lengths, maxlen=maxlen)

    # --- reductions and products ---------------------------------------------------------------------
    @classmethod
    def reduce_raw(cls, raw: Any, mode: str, axes: Sequence[int]) -> Any:
        if mode in ("argmax", "argmin"):
            (axis,) = axes
            fn = tf.argmax if mode == "argmax" else tf.argmin
            return fn(raw, axis=axis, output_type=tf.int32)
        return _REDUCE[mode](raw, axis=list(axes))

    @classmethod
    def matmul_raw(cls, a: Any, b: Any) -> Any:
        return tf.linalg.matmul(a, b)

    @classmethod
    def softmax_raw(cls, raw: Any, axis: int, log: bool) -> Any:
        rank = raw.shape.rank
        if rank is None or axis % rank == rank - 1:
            return (tf.nn.log_softmax if log else tf.nn.softmax)(raw, axis=axis)
        # over another axis tf.nn.softmax swaps it to the end with a permutation computed at run time (about ten
        # ops, in every step of a loop); written out, it is five
        # (with the gradient from the output alone: 3-4 ops, where autodiff through these takes ~20)
        def forward(x):
            # (stop_gradient: where these ops are differentiated after all, in a cond branch, the shift's is 0)
            shifted = x - tf.stop_gradient(tf.reduce_max(x, axis=axis, keepdims=True))
            if log:
                return shifted - tf.math.log(tf.reduce_sum(tf.exp(shifted), axis=axis, keepdims=True))
            exp = tf.exp(shifted)
            return exp / tf.reduce_sum(exp, axis=axis, keepdims=True)

        def backward(dy):
            if log:
                return dy - tf.exp(y) * tf.reduce_sum(dy, axis=axis, keepdims=True)
            return y * (dy - tf.reduce_sum(dy * y, axis=axis, keepdims=True))
        y = with_tape_gradient("Softmax", forward, raw, backward)
        return y

    @classmethod
    def cumsum_raw(cls, raw: Any, axis: int, reverse: bool) -> Any:
        return tf.cumsum(raw, axis=axis, reverse=reverse)

    # --- randomness -----------------------------------------------------------------------------------
    @classmethod
    def dropout_raw(cls, raw: Any, rate: float, noise_shape: Optional[Sequence[Any]]) -> Any:
        # tf.nn.dropout's values (a dropped inf or NaN gives 0; the mask from 16 random bits per entry, see
        # keep_mask) with a gradient of its own: `where` of the kept mask, 2 ops where SelectV2's broadcasting
        # gradient takes 14, and like it only the bool mask is kept for the backward pass, not a float one
        if not raw.dtype.is_floating:
            raise ValueError(f"dropout of a {raw.dtype.name} tensor: it needs floats (the kept values are scaled)")
        if not 0 <= rate < 1:
            raise ValueError(f"dropout rate {rate}: expected a number in [0, 1)")
        if noise_shape is None:
            shape, static = graph_shape(raw), (raw.shape.as_list() if raw.shape.rank is not None else [])
        else:
            shape = tf.stack([tf.cast(n, tf.int32) for n in noise_shape])
            static = [int(n) if isinstance(n, (int, np.integer)) else None for n in noise_shape]
        keep = keep_mask(shape, static, rate)
        scale, zero = graph_constant(1.0 / (1.0 - rate), raw.dtype), graph_constant(0.0, raw.dtype)
        dropped = with_tape_gradient("Dropout", lambda x: tf.where(keep, x * scale, zero), raw,
                                     lambda dy: tf.where(keep, dy * scale, zero))
        same_shape(dropped, raw)
        return dropped

    @classmethod
    def set_random_seed_raw(cls, seed: int) -> None:
        tf.random.set_seed(seed)

    @classmethod
    def random_raw(cls, shape: Sequence[Any], distribution: str, dtype: str, **kwargs) -> Any:
        shape = tf.stack([tf.cast(n, tf.int32) for n in shape]) if shape else []
        if distribution == "uniform":
            return tf.random.uniform(shape, kwargs.get("minval", 0), kwargs.get("maxval", 1), dtype=dtype,
                                     seed=kwargs.get("seed"))
        if distribution == "normal":
            return tf.random.normal(shape, kwargs.get("mean", 0.0), kwargs.get("stddev", 1.0), dtype=dtype)
        if distribution == "truncated_normal":
            return tf.random.truncated_normal(shape, kwargs.get("mean", 0.0), kwargs.get("stddev", 1.0),
                                              dtype=dtype)
        raise ValueError(f"unknown distribution {distribution!r}")

    # --- control flow -----------------------------------------------------------------------------------
    @classmethod
    def cond_raw(cls, pred: Any, true_fn, false_fn) -> Any:
        return tf.cond(pred, true_fn, false_fn)

    @classmethod
    def while_loop_raw(cls, cond, body, initial, shapes=None) -> Any:
        body = loop_body(body)
        if shapes is None:
            return tf.while_loop(cond, body, initial)
        invariants = [tf.TensorShape(None) if isinstance(raw, tf.TensorArray) else tf.TensorShape(shape)
                      for raw, shape in zip(initial, shapes)]
        return tf.while_loop(cond, body, initial, shape_invariants=invariants)

    @classmethod
    def shared_function_raw(cls, fn):
        """Inside a traced step: `fn` as a `tf.function` that stays a function call in the graph (not inlined),
        so its ops exist once however often it is called."""
        if tf.executing_eagerly():
            return None
        return tf.function(fn, autograph=False, experimental_attributes={"_noinline": True})

    @classmethod
    def scan_raw(cls, step, elems, initial) -> Any:
        return tf.scan(step, elems, initializer=initial)

    @classmethod
    def name_scope_raw(cls, name: str):
        return tf.name_scope(name)

    @classmethod
    def emission_scope_raw(cls):
        """Inside a tf.function with AutoGraph, the emission runs unconverted (AutoGraph would rewrite the
        Python control flow of the loop runner)."""
        from tensorflow.python.autograph.core import ag_ctx

        return ag_ctx.ControlStatusCtx(status=ag_ctx.Status.DISABLED)

    # --- checks --------------------------------------------------------------------------------------------
    @classmethod
    def assert_equal_raw(cls, a: Any, b: Any, message: str) -> Any:
        """An op that fails with `message` at run time unless a == b everywhere."""
        return tf.debugging.assert_equal(a, b, message=message)

    @classmethod
    def with_dependencies_raw(cls, raw: Any, dependencies: Sequence[Any]) -> Any:
        with tf.control_dependencies([d for d in dependencies if d is not None]):
            return tf.identity(raw)
