"""The PyTorch backend's basic operations: values, elementwise math, layout, reductions, control flow.

Each op computes what the TensorFlow backend's op computes, including the cases where PyTorch's nearest
function differs: floor division and modulo round towards -inf, `maximum`/`minimum`/`clip_by_value` pass the
gradient as TF does on ties, `leaky_relu` has TF's slope 0.2, slices may step backwards, gathers share leading
batch axes, reductions over no axis change nothing, and a Python number next to a tensor takes its dtype
(PyTorch would promote).
"""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

import numpy as np
import torch
import torch.nn.functional as F


def torch_dtype(name: str) -> torch.dtype:
    """The torch dtype of a dtype name ("float32", "int32", "bool", ...)."""
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"the torch backend has no dtype {name!r}")
    return dtype


def full_precision(raw: Any) -> Any:
    """A bfloat16 tensor made under bfloat16 autocast (mixed precision: `engine/precision.py`) as float32, for the
    ops that keep float32 there: softmax, log-softmax, sums and means (normalisation statistics, losses)."""
    if raw.dtype == torch.bfloat16 and torch.is_autocast_enabled("cpu"):
        return raw.float()
    return raw


def as_int(value: Any) -> Any:
    """A shape entry or index as a Python int (raw scalars included); None stays None."""
    return value if value is None or isinstance(value, int) else int(value)


def _pair(a: Any, b: Any):
    """Both operands as tensors: a non-tensor takes the other's dtype (as TF's convert_to_tensor would)."""
    if not isinstance(a, torch.Tensor):
        a = torch.as_tensor(a, dtype=b.dtype)
    if not isinstance(b, torch.Tensor):
        b = torch.as_tensor(b, dtype=a.dtype)
    return a, b


def _autocast_pair(a: Any, b: Any):
    """`_pair`, and under bfloat16 autocast a float32 operand next to a bfloat16 one as bfloat16: the elementwise
    math between matmuls stays bfloat16 (bias, layer-norm scale, residual adds), as TF's bf16 rewrite does;
    PyTorch would promote to float32 and the next matmul would cast back (engine/precision.py)."""
    a, b = _pair(a, b)
    if a.dtype != b.dtype and torch.is_autocast_enabled("cpu"):
        if a.dtype == torch.bfloat16 and b.dtype == torch.float32:
            b = b.to(torch.bfloat16)
        elif b.dtype == torch.bfloat16 and a.dtype == torch.float32:
            a = a.to(torch.bfloat16)
    return a, b


def _floordiv(a, b):
    return torch.div(a, b, rounding_mode="floor")


def _divide_no_nan(a, b):
    zero = b == 0
    return torch.where(zero, torch.zeros_like(a), a / torch.where(zero, torch.ones_like(b), b))


def _truediv(a, b):
    if not a.dtype.is_floating_point:  # TF: int32 / int32 -> float64 (int8/16 -> float32)
        wide = torch.float64 if a.dtype in (torch.int32, torch.int64) else torch.float32
        return torch.true_divide(a.to(wide), b.to(wide))
    return torch.true_divide(a, b)


_COMBINE = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "truediv": _truediv, "floordiv": _floordiv,
    "mod": torch.remainder, "pow": torch.pow,
    # TF's gradient goes to a where a >= b (maximum) / a <= b (minimum); torch.maximum splits it on ties
    "maximum": lambda a, b: torch.where(a >= b, a, b), "minimum": lambda a, b: torch.where(a <= b, a, b),
    "logical_and": torch.logical_and, "logical_or": torch.logical_or, "logical_xor": torch.logical_xor,
    "squared_difference": lambda a, b: torch.square(a - b), "divide_no_nan": _divide_no_nan,
}

_COMPARE = {
    "equal": torch.eq, "not_equal": torch.ne, "less": torch.lt, "less_equal": torch.le, "greater": torch.gt,
    "greater_equal": torch.ge,
}

_ACTIVATIONS = {
    "identity": lambda x: x, "relu": torch.relu, "relu6": F.relu6, "elu": F.elu, "selu": F.selu,
    "gelu": lambda x: F.gelu(x, approximate="none"), "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "leaky_relu": lambda x: F.leaky_relu(x, 0.2), "tanh": torch.tanh, "sigmoid": torch.sigmoid,
    "log_sigmoid": F.logsigmoid, "softplus": F.softplus, "softsign": F.softsign, "silu": F.silu, "swish": F.silu,
    "exp": torch.exp, "log": torch.log, "abs": torch.abs, "square": torch.square, "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt, "sin": torch.sin, "cos": torch.cos, "erf": torch.erf, "sign": torch.sign,
    "neg": torch.neg, "negative": torch.neg, "reciprocal": torch.reciprocal, "logical_not": torch.logical_not,
    "floor": torch.floor, "ceil": torch.ceil, "round": torch.round, "is_finite": torch.isfinite,
    "log1p": torch.log1p,
}


def _prod(raw, axes):
    for axis in sorted(axes, reverse=True):
        raw = torch.prod(raw, dim=axis, dtype=raw.dtype)
    return raw


def _int_mean(raw, axes):  # TF's integer mean truncates
    count = int(np.prod([raw.shape[a] for a in axes]))
    return torch.div(torch.sum(raw, dim=tuple(axes)), count, rounding_mode="trunc").to(raw.dtype)


_REDUCE = {
    "sum": lambda x, axes: torch.sum(x, dim=axes, dtype=x.dtype),
    "mean": lambda x, axes: torch.mean(x, dim=axes) if x.dtype.is_floating_point else _int_mean(x, axes),
    "max": lambda x, axes: torch.amax(x, dim=axes), "min": lambda x, axes: torch.amin(x, dim=axes),
    "prod": _prod, "logsumexp": lambda x, axes: torch.logsumexp(x, dim=axes),
    "any": lambda x, axes: torch.any(x, dim=axes), "all": lambda x, axes: torch.all(x, dim=axes),
}


def _keep_mask(shape: Sequence[int], rate: float, dtype) -> Any:
    """Dropout's mask: 1 / (1 - rate) where an entry is kept, else 0. Each entry compares 16 random bits with the
    rate (it is dropped with probability `rate` rounded to 1/65536); the bits come four to a 64-bit draw of the
    global generator, 5x less CPU than `torch.rand`'s float per entry (those random numbers were 10-14% of a
    Transformer train step)."""
    count = math.prod(shape)
    bits = torch.empty(((count + 3) // 4,), dtype=torch.int64).random_(-2 ** 63, None).view(torch.int16)
    keep = (bits if count % 4 == 0 else bits[:count]).view(tuple(shape)) >= min(round(rate * 65536), 65535) - 32768
    return keep.to(dtype).mul_(1.0 / (1.0 - rate))


class _ScaledGradient(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.scale = scale
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.scale, None


class _SyntheticGradient(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, predicted, meta_scale):
        ctx.save_for_backward(predicted)
        ctx.meta_scale = meta_scale
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        (predicted,) = ctx.saved_tensors
        return predicted, (predicted - grad) * (2.0 * ctx.meta_scale / max(grad.numel(), 1)), None


class _FilteredGradient(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, threshold, reduce_axes):
        ctx.threshold, ctx.reduce_axes = threshold, reduce_axes
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        keep = torch.amax(grad * grad, dim=ctx.reduce_axes, keepdim=True) < ctx.threshold
        return torch.where(keep, grad, torch.zeros_like(grad)), None, None


class CoreOps:
    """Values, elementwise math, layout, reductions and control flow on eager `torch.Tensor`s."""

    name = "torch"

    # --- values and shapes --------------------------------------------------------------------
    @classmethod
    def is_raw(cls, value: Any) -> bool:
        return isinstance(value, torch.Tensor)

    @classmethod
    def convert_to_raw(cls, value: Any, dtype: str) -> Any:
        if isinstance(value, torch.Tensor):
            return value if value.dtype == torch_dtype(dtype) else value.to(torch_dtype(dtype))
        if dtype == "bfloat16":  # NumPy has no bfloat16 that torch reads (a constant under bf16 autocast)
            return torch.from_numpy(np.array(value, dtype="float32")).to(torch.bfloat16)
        return torch.from_numpy(np.array(value, dtype=dtype))  # a copy: the caller's array stays its own

    @classmethod
    def to_numpy(cls, raw: Any):
        return raw.detach().cpu().numpy()

    @classmethod
    def dtype_name(cls, raw: Any) -> str:
        return str(raw.dtype).replace("torch.", "")

    @classmethod
    def autocast_dtype_name(cls) -> Optional[str]:
        return "bfloat16" if torch.is_autocast_enabled("cpu") else None

    @classmethod
    def get_known_shape_raw(cls, raw: Any):
        return tuple(raw.shape)

    @classmethod
    def get_shape_tuple_raw(cls, raw: Any):
        return tuple(raw.shape)

    @classmethod
    def fill_raw(cls, shape: Sequence[Any], value: Any, dtype: str) -> Any:
        return torch.full([as_int(n) for n in shape], value, dtype=torch_dtype(dtype))

    @classmethod
    def range_raw(cls, limit: Any, dtype: str) -> Any:
        return torch.arange(as_int(limit), dtype=torch_dtype(dtype))

    # --- elementwise ----------------------------------------------------------------------------
    @classmethod
    def combine_raw(cls, a: Any, kind: str, b: Any) -> Any:
        return _COMBINE[kind](*_autocast_pair(a, b))

    @classmethod
    def compare_raw(cls, a: Any, kind: str, b: Any) -> Any:
        return _COMPARE[kind](*_pair(a, b))

    @classmethod
    def where_raw(cls, cond: Any, true_: Any, false_: Any) -> Any:
        if isinstance(true_, torch.Tensor) or isinstance(false_, torch.Tensor):
            true_, false_ = _pair(true_, false_)
        return torch.where(cond, true_, false_)

    @classmethod
    def activation_raw(cls, raw: Any, func: str) -> Any:
        return _ACTIVATIONS[func](raw)

    @classmethod
    def cast_raw(cls, raw: Any, dtype: str) -> Any:
        return raw if raw.dtype == torch_dtype(dtype) else raw.to(torch_dtype(dtype))

    @classmethod
    def clip_by_value_raw(cls, raw: Any, low: Any, high: Any) -> Any:
        low = low if isinstance(low, torch.Tensor) else torch.as_tensor(low, dtype=raw.dtype)
        high = high if isinstance(high, torch.Tensor) else torch.as_tensor(high, dtype=raw.dtype)
        return torch.clamp(raw, low, high)  # the gradient passes where low <= x <= high, as in TF

    @classmethod
    def stop_gradient_raw(cls, raw: Any) -> Any:
        return raw.detach()

    @classmethod
    def scaled_gradient_raw(cls, raw: Any, scale: float) -> Any:
        return _ScaledGradient.apply(raw, float(scale))

    @classmethod
    def filtered_gradient_raw(cls, raw: Any, threshold: float, reduce_axes: Sequence[int]) -> Any:
        return _FilteredGradient.apply(raw, float(threshold), tuple(reduce_axes))

    @classmethod
    def synthetic_gradient_raw(cls, raw: Any, synthetic: Any, meta_scale: float) -> Any:
        return _SyntheticGradient.apply(raw, synthetic, float(meta_scale))

    @classmethod
    def host_callback_raw(cls, fn, raws: Sequence[Any]) -> Any:
        fn(*[r.detach().cpu().numpy() for r in raws])
        return None

    # --- layout ------------------------------------------------------------------------------------
    @classmethod
    def reshape_raw(cls, raw: Any, shape: Sequence[Any]) -> Any:
        return torch.reshape(raw, [as_int(n) for n in shape])

    @classmethod
    def transpose_raw(cls, raw: Any, perm: Sequence[int]) -> Any:
        return raw if list(perm) == list(range(len(perm))) else raw.permute(*perm)

    @classmethod
    def expand_dims_raw(cls, raw: Any, axis: int) -> Any:
        return torch.unsqueeze(raw, axis)

    @classmethod
    def squeeze_raw(cls, raw: Any, axes: Sequence[int]) -> Any:
        return torch.squeeze(raw, dim=tuple(axes)) if axes else raw

    @classmethod
    def broadcast_to_raw(cls, raw: Any, shape: Sequence[Any]) -> Any:
        return torch.broadcast_to(raw, [as_int(n) for n in shape])

    @classmethod
    def concat_raw(cls, raws: Sequence[Any], axis: int) -> Any:
        return raws[0] if len(raws) == 1 else torch.cat(list(raws), dim=axis)

    @classmethod
    def stack_raw(cls, raws: Sequence[Any], axis: int) -> Any:
        return torch.stack(list(raws), dim=axis)

    @classmethod
    def split_raw(cls, raw: Any, sizes: Sequence[int], axis: int):
        return list(torch.split(raw, [as_int(n) for n in sizes], dim=axis))

    @classmethod
    def pad_raw(cls, raw: Any, paddings, mode: str, value: Any) -> Any:
        paddings = [(as_int(left), as_int(right)) for left, right in paddings]
        if mode == "constant":
            flat = [n for left, right in reversed(paddings) for n in (left, right)]
            return F.pad(raw, flat, mode="constant", value=value.item() if torch.is_tensor(value) else value)
        for axis, (left, right) in enumerate(paddings):  # reflect/symmetric/replicate: gather the source frames
            if left or right:
                n = raw.shape[axis]
                pos = torch.arange(-left, n + right)
                if mode == "reflect":
                    pos = torch.where(pos < 0, -pos, torch.where(pos >= n, 2 * (n - 1) - pos, pos))
                elif mode == "symmetric":
                    pos = torch.where(pos < 0, -pos - 1, torch.where(pos >= n, 2 * n - 1 - pos, pos))
                elif mode in ("replicate", "edge"):
                    pos = pos.clamp(0, n - 1)
                else:
                    raise ValueError(f"unknown pad mode {mode!r}")
                raw = torch.index_select(raw, axis, pos)
        return raw

    @classmethod
    def slice_raw(cls, raw: Any, axis: int, start: Any, end: Any, step: Any) -> Any:
        start, end, step = as_int(start), as_int(end), as_int(step)
        if step is None or step > 0:
            return raw[(slice(None),) * axis + (slice(start, end, step),)]
        positions = range(*slice(start, end, step).indices(raw.shape[axis]))  # torch slices cannot step back
        return torch.index_select(raw, axis, torch.tensor(list(positions), dtype=torch.int64))

    @classmethod
    def top_k_raw(cls, raw: Any, k: int) -> Any:
        values, indices = torch.topk(raw, k, dim=-1, largest=True, sorted=True)
        return values, indices.to(torch.int32)

    @classmethod
    def gather_raw(cls, raw: Any, indices: Any, axis: int, batch_dims: int) -> Any:
        """tf.gather: raw.shape[:axis] + indices.shape[batch_dims:] + raw.shape[axis + 1:]."""
        indices = torch.as_tensor(indices).to(torch.int64)
        axis = axis % raw.dim()
        if batch_dims == 0:
            out = torch.index_select(raw, axis, indices.reshape(-1))
            return out.reshape(raw.shape[:axis] + indices.shape + raw.shape[axis + 1:])
        batch_shape = raw.shape[:batch_dims]
        n = int(np.prod(batch_shape))
        flat = raw.reshape((n,) + raw.shape[batch_dims:])
        flat_indices = indices.reshape((n,) + indices.shape[batch_dims:])
        pre = axis - batch_dims  # axes between the batch and `axis`
        moved = torch.movedim(flat, 1 + pre, 1)  # [n, A, pre..., post...]
        rows = torch.arange(n).reshape((n,) + (1,) * (flat_indices.dim() - 1))
        out = moved[rows, flat_indices]  # [n, I..., pre..., post...]
        k = flat_indices.dim() - 1
        out = torch.movedim(out, tuple(range(1 + k, 1 + k + pre)), tuple(range(1, 1 + pre)))
        return out.reshape(batch_shape + raw.shape[batch_dims:axis] + indices.shape[batch_dims:] +
                           raw.shape[axis + 1:])

    @classmethod
    def sequence_mask_raw(cls, lengths: Any, maxlen: Any) -> Any:
        return torch.arange(as_int(maxlen)) < lengths.unsqueeze(-1)

    @classmethod
    def frames_all_valid_raw(cls, lengths: Any, maxlen: Any) -> bool:
        # an eager host tensor only: on a GPU the answer would wait for the device, and torch.compile would break
        # its graph here
        if lengths.device.type != "cpu" or torch.compiler.is_compiling() or not lengths.numel():
            return False
        return int(lengths.min()) >= as_int(maxlen)

    # --- reductions and products ---------------------------------------------------------------------
    @classmethod
    def reduce_raw(cls, raw: Any, mode: str, axes: Sequence[int]) -> Any:
        if mode in ("argmax", "argmin"):
            (axis,) = axes
            # max/min's indices: the same first index of the extreme (and of a NaN), 2-3x faster than argmax over
            # a short last axis (the frame error of 2 classes) and ~12% over 500 classes
            fn = torch.max if mode == "argmax" else torch.min
            return fn(raw, dim=axis).indices.to(torch.int32)
        if not axes:
            return raw
        return _REDUCE[mode](full_precision(raw), tuple(axes))

    @classmethod
    def matmul_raw(cls, a: Any, b: Any) -> Any:
        return torch.matmul(a, b)

    @classmethod
    def matmul_add_raw(cls, a: Any, b: Any, bias: Any) -> Optional[Any]:
        # one addmm (what nn.Linear runs): no second pass over the result and no second buffer for the bias add;
        # not under bfloat16 autocast (its casts of mixed operands are combine_raw's, see _autocast_pair)
        if a.dim() != 2 or b.dim() != 2 or bias.dim() != 1 or torch.is_autocast_enabled("cpu") or \
                not a.dtype == b.dtype == bias.dtype:
            return None
        return torch.addmm(bias, a, b)

    @classmethod
    def softmax_raw(cls, raw: Any, axis: int, log: bool) -> Any:
        if log:  # log-probabilities feed losses: float32
            return torch.log_softmax(full_precision(raw), dim=axis)
        # a bfloat16 softmax computes in float32 inside the kernel and rounds its output, which feeds a matmul
        # (attention weights) that would round it anyway: no casts of the [B, H, T, T] tensor each way
        return torch.softmax(raw, dim=axis)

    @classmethod
    def cumsum_raw(cls, raw: Any, axis: int, reverse: bool) -> Any:
        if reverse:
            return torch.flip(torch.cumsum(torch.flip(raw, [axis]), dim=axis, dtype=raw.dtype), [axis])
        return torch.cumsum(raw, dim=axis, dtype=raw.dtype)  # torch would widen int32 to int64

    # --- randomness -----------------------------------------------------------------------------------
    @classmethod
    def dropout_raw(cls, raw: Any, rate: float, noise_shape: Optional[Sequence[Any]]) -> Any:
        # One multiply by a scaled 0/1 mask each way (measured faster than F.dropout's bernoulli_ on CPU; a mask by
        # hand plus `where` took twice the ops). A noise shape draws the small mask and broadcasts it. Unlike TF, a
        # dropped inf or NaN gives NaN (0 times it), as F.dropout does.
        shape = raw.shape if noise_shape is None else [as_int(n) for n in noise_shape]
        return raw * _keep_mask(shape, rate, raw.dtype)

    _seeded_generators: dict = {}
    """seed -> the torch.Generator of the `random_raw` draws that give that `seed` (restarted with the seed)."""

    @classmethod
    def set_random_seed_raw(cls, seed: int) -> None:
        torch.manual_seed(seed)
        cls._seeded_generators.clear()

    @classmethod
    def _generator(cls, seed: Optional[int]):
        if seed is None:
            return None
        if seed not in cls._seeded_generators:
            cls._seeded_generators[seed] = torch.Generator().manual_seed(int(seed))
        return cls._seeded_generators[seed]

    @classmethod
    def random_raw(cls, shape: Sequence[Any], distribution: str, dtype: str, **kwargs) -> Any:
        shape, dt = [as_int(n) for n in shape], torch_dtype(dtype)
        if distribution == "uniform":
            low, high = kwargs.get("minval", 0), kwargs.get("maxval", 1)
            generator = cls._generator(kwargs.get("seed"))
            if not dt.is_floating_point:
                return torch.randint(int(low), int(high), shape, dtype=dt, generator=generator)
            return torch.rand(shape, dtype=dt, generator=generator) * (high - low) + low
        if distribution == "normal":
            return torch.randn(shape, dtype=dt) * kwargs.get("stddev", 1.0) + kwargs.get("mean", 0.0)
        if distribution == "truncated_normal":  # TF: redrawn outside 2 standard deviations
            mean, stddev = kwargs.get("mean", 0.0), kwargs.get("stddev", 1.0)
            return torch.nn.init.trunc_normal_(torch.empty(shape, dtype=dt), mean, stddev, mean - 2 * stddev,
                                               mean + 2 * stddev)
        raise ValueError(f"unknown distribution {distribution!r}")

    # --- control flow: eager, so plain Python ------------------------------------------------------------
    @classmethod
    def cond_raw(cls, pred: Any, true_fn, false_fn) -> Any:
        return true_fn() if bool(pred) else false_fn()

    @classmethod
    def while_loop_raw(cls, cond, body, initial, shapes=None) -> Any:
        state = list(initial)
        while bool(cond(*state)):
            state = list(body(*state))
        return state

    @classmethod
    def scan_raw(cls, step, elems, initial) -> Any:
        """tf.scan over lists: `step(states, frames)` for axis 0 of every tensor of `elems`; each state stacked."""
        state = list(initial)
        outputs = [[] for _ in state]
        for t in range(elems[0].shape[0]):
            state = list(step(state, [e[t] for e in elems]))
            for out, s in zip(outputs, state):
                out.append(s)
        return [torch.stack(out) if out else s.new_zeros((0,) + tuple(s.shape)) for out, s in zip(outputs, initial)]

    # --- checks --------------------------------------------------------------------------------------------
    @classmethod
    def assert_equal_raw(cls, a: Any, b: Any, message: str) -> Any:
        """Checks at once (eager): a ValueError with `message` unless a == b everywhere."""
        if a is not b and not bool(torch.all(a == b)):
            raise ValueError(message)
        return None

    @classmethod
    def with_dependencies_raw(cls, raw: Any, dependencies: Sequence[Any]) -> Any:
        return raw
