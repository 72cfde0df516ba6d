"""Initial values of parameters drawn with NumPy, the same numbers as the TensorFlow backend's Keras initializers.

The PyTorch backend starts from the values the TensorFlow backend would (same config, same seed) without loading
TensorFlow. The TensorFlow backend takes the uniform and constant values from here too (`bit_identical_only`): one
NumPy draw for many parameters instead of an eager initializer call for each.

Keras 3 on TensorFlow draws an initializer with the integer seed `s` through TensorFlow's stateless random ops on
the CPU: the seed pair ``[s mod (2**31 - 2), 0]`` is hashed into a Philox-4x32-10 key and counter
(one Philox block of the pair under a fixed key), then

* uniform: output ``4 i + j`` is word ``j`` of Philox block ``counter + i``, its 23 low bits the mantissa of a
  float in [1, 2), minus 1; scaled as ``u * (max - min) + min`` in float32;
* normal: the same words in pairs through Box-Muller (``sqrt(-2 log u1)`` times the sine and cosine of
  ``2 pi u2``); ``z * stddev + mean``;
* truncated normal: output group ``i`` (4 values) reads its words from block ``counter + 256 i`` on, Box-Muller
  pairs in order, keeping the values with ``|z| < 2`` until it has 4;
* the Keras classes on top: variance scaling (glorot/he/lecun; fans as Keras counts them), random
  normal/uniform, truncated normal, orthogonal (QR of a normal matrix, signs from R's diagonal), constants.

Box-Muller's log/sin/cos are TensorFlow's float32 libm calls; here they are computed in float64 and rounded, which
can differ in the last bit (tests compare with TensorFlow to float32 precision; QR of the orthogonal initializer
to 1e-5). `initial_value` returns None for anything not reimplemented (another dtype, arguments Keras would
reject or that are not covered): the caller then uses TensorFlow's initializer.

`initial_values` takes a network's parameters at once and makes the draws of one kind and size together (one
Philox over all their blocks, a key per parameter): with parameters of a few thousand values, NumPy's cost per
call, not the arithmetic, is what one-by-one drawing pays (the 5000-layer torch chain's build: ~2.4 -> ~2.0 s).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from ..initializer_spec import parse_initializer

_M0, _M2 = 0xD2511F53, 0xCD9E8D57  # Philox's multipliers of words 0 and 2
_W0, _W1 = 0x9E3779B9, 0xBB67AE85  # added to the key's two words after each round
_MULTIPLIERS = np.array([_M0, _M2], np.uint64).reshape(2, 1, 1)
_KEY_STEP = np.array([_W0, _W1], np.uint32).reshape(2, 1, 1)
_MASK32, _SHIFT32 = np.uint64(0xFFFFFFFF), np.uint64(32)
_TRUNCATED_GROUP_BLOCKS = 256  # Philox blocks reserved per group of 4 truncated-normal outputs (TF's CPU kernel)
_BATCH_BLOCKS = 16384
"""Philox blocks per NumPy call: small parameters of one kind and size are drawn together (NumPy's cost per call
spread over many: 64 x 64 weights ~28 us each in calls of 16, ~70 us one by one, ~45 us in calls of 64), large
ones in pieces, so that the arrays (256 KB) fit the cache (a glorot_uniform of 38M values: 0.3 s and ~320 MB
peak, against 2.6 s and ~970 MB in one piece)."""


class _Draw(NamedTuple):
    """A parameter's values made from `size` values of TF's stateless standard `kind` ("uniform", "normal" or
    "truncated") for `seed`: `finish(those values)` (scaled, shifted, orthogonalised)."""
    kind: str
    size: int
    seed: int
    finish: Callable[[np.ndarray], np.ndarray]


def _philox(multiplied: np.ndarray, low: np.ndarray, keys: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Philox-4x32-10 of counters given as words 0 and 2 (`multiplied`, uint64 [2, m, n] holding uint32, changed
    in place) and words 1 and 3 (`low`, uint32 [2, m, n]) under `keys` (uint32 [2, m, 1]: one key per row m): the
    blocks' words in the same two forms.

    A round is three NumPy operations whatever the size: the products go to one of two uint64 buffers, whose uint32
    halves are read through views (high halves, and the previous round's low halves, crossed between words 0 and
    2) instead of being shifted and masked out."""
    shape = multiplied.shape
    buffers = []
    for _ in range(2):
        product = np.empty(shape, np.uint64)
        halves = product.view(np.uint32).reshape(shape + (2,))[::-1]  # little-endian: [..., 0] low, [..., 1] high
        buffers.append((product, halves[..., 1], halves[..., 0]))
    mixed = np.empty(shape, np.uint32)
    keys = keys.copy()
    for r in range(10):
        product, high, next_low = buffers[r & 1]  # the other buffer holds `low`, this round's input
        np.multiply(multiplied, _MULTIPLIERS, out=product)
        np.bitwise_xor(high, low, out=mixed)  # words 0, 2 = high halves ^ words 1, 3 ^ key
        np.bitwise_xor(mixed, keys, out=multiplied)
        keys += _KEY_STEP  # (uint32: wraps around)
        low = next_low  # words 1, 3 = low halves
    return multiplied, low


def _philox_block(words: Tuple[int, int, int, int], key: Tuple[int, int]) -> Tuple[int, int, int, int]:
    """Philox-4x32-10 of one counter, in Python integers (~3 us; `_philox` on one block costs its 30 NumPy
    calls)."""
    c0, c1, c2, c3 = words
    k0, k1 = key
    for _ in range(10):
        product0, product2 = c0 * _M0, c2 * _M2
        c0, c1 = (product2 >> 32) ^ c1 ^ k0, product2 & 0xFFFFFFFF
        c2, c3 = (product0 >> 32) ^ c3 ^ k1, product0 & 0xFFFFFFFF
        k0, k1 = (k0 + _W0) & 0xFFFFFFFF, (k1 + _W1) & 0xFFFFFFFF
    return c0, c1, c2, c3


def key_counter(seed: int) -> Tuple[Tuple[int, int], Tuple[int, int]]:
    """Philox key and words 2 and 3 of the start counter of Keras's integer seed, as TensorFlow's stateless ops
    make them (the counter's words 0 and 1 start at zero)."""
    seed0 = seed % (2 ** 31 - 2)  # Keras: int64 seed pair -> floormod(., int32 max - 1) -> int32
    seed1 = 0
    mix = _philox_block((seed0 & 0xFFFFFFFF, seed0 >> 32, seed1 & 0xFFFFFFFF, seed1 >> 32), (0x3EC8F720, 0x02461E29))
    return (mix[0], mix[1]), (mix[2], mix[3])


def _blocks_at(offsets: np.ndarray, seeds: Sequence[int]) -> np.ndarray:
    """The words of the Philox blocks at `offsets` from each seed's start counter: uint32 [seeds, offsets, 4]."""
    starts = [key_counter(seed) for seed in seeds]
    m, n = len(seeds), len(offsets)
    keys = np.array([[key[k] for key, _ in starts] for k in range(2)], np.uint32).reshape(2, m, 1)
    multiplied, low = np.empty((2, m, n), np.uint64), np.empty((2, m, n), np.uint32)
    offsets = offsets.astype(np.uint64)
    multiplied[0], low[0] = offsets & _MASK32, offsets >> _SHIFT32  # words 0, 1 (theirs start at zero: no carry)
    multiplied[1] = np.array([counter[0] for _, counter in starts], np.uint64)[:, None]
    low[1] = np.array([counter[1] for _, counter in starts], np.uint32)[:, None]
    multiplied, low = _philox(multiplied, low, keys)
    words = np.empty((m, n, 4), np.uint32)
    words[..., 0::2], words[..., 1::2] = np.moveaxis(multiplied, 0, -1), np.moveaxis(low, 0, -1)
    return words


def _unit_floats(words: np.ndarray) -> np.ndarray:
    """[0, 1) floats of uint32 words: 23 random mantissa bits of a float in [1, 2), minus 1."""
    bits = (words & np.uint32(0x7FFFFF)) | np.uint32(0x3F800000)
    return bits.view(np.float32) - np.float32(1.0)


def _box_muller(x0: np.ndarray, x1: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    u1 = np.maximum(_unit_floats(x0), np.float32(1e-7))
    v1 = (2.0 * math.pi * _unit_floats(x1).astype(np.float64)).astype(np.float32)
    log_u1 = np.log(u1.astype(np.float64)).astype(np.float32)
    u2 = np.sqrt(np.float32(-2.0) * log_u1)
    v1 = v1.astype(np.float64)
    return np.sin(v1).astype(np.float32) * u2, np.cos(v1).astype(np.float32) * u2


def _normals(words: np.ndarray) -> np.ndarray:
    """Box-Muller of words [..., 4] in pairs (0, 1) and (2, 3): float32 [..., 4]."""
    out = np.empty(words.shape, np.float32)
    out[..., 0], out[..., 1] = _box_muller(words[..., 0], words[..., 1])
    out[..., 2], out[..., 3] = _box_muller(words[..., 2], words[..., 3])
    return out


def _standard_truncated_normal(size: int, seed: int) -> np.ndarray:
    """`size` float32 values of TF's stateless truncated standard normal (|z| < 2) for `seed`."""
    groups = (size + 3) // 4
    out = np.zeros((groups, 4), np.float32)
    for first in range(0, groups, _BATCH_BLOCKS):  # the groups in pieces: arrays that fit the cache
        _truncated_groups(out[first:first + _BATCH_BLOCKS], first, seed)
    return out.reshape(-1)[:size]


def _truncated_groups(out: np.ndarray, first: int, seed: int) -> None:
    """Fills `out` ([groups, 4]) with the truncated-normal output groups `first`, `first + 1`, ... of `seed`."""
    filled = np.zeros(len(out), np.int64)
    pending = np.arange(len(out))
    block = 0
    while len(pending):
        offsets = (pending + first) * _TRUNCATED_GROUP_BLOCKS + block
        candidates = _normals(_blocks_at(offsets, [seed])[0])
        for k in range(4):  # in the order the kernel takes them
            take = (np.abs(candidates[:, k]) < np.float32(2.0)) & (filled[pending] < 4)
            rows = pending[take]
            out[rows, filled[rows]] = candidates[take, k]
            filled[rows] += 1
        pending = pending[filled[pending] < 4]
        block += 1


def _standard(kind: str, size: int, seeds: Sequence[int]) -> np.ndarray:
    """[seeds, size] float32 values of TF's stateless standard `kind` ("uniform" [0, 1), "normal" or "truncated"
    normal (|z| < 2)), one row per seed."""
    if kind == "truncated":
        return np.stack([_standard_truncated_normal(size, seed) for seed in seeds]).reshape(len(seeds), size)
    blocks = (size + 3) // 4
    values = np.empty((len(seeds), blocks, 4), np.float32)
    step = max(1, _BATCH_BLOCKS // max(1, len(seeds)))  # a large parameter in pieces: arrays that fit the cache
    for start in range(0, blocks, step):
        words = _blocks_at(np.arange(start, min(start + step, blocks)), seeds)
        values[:, start:start + step] = _unit_floats(words) if kind == "uniform" else _normals(words)
    return values.reshape(len(seeds), -1)[:, :size]


def _finished(draws: Sequence[_Draw]) -> List[np.ndarray]:
    """Each draw's values (`finish` of its standard values); the uniform and normal draws of one size made together,
    `_BATCH_BLOCKS` blocks per call, and finished at once (the standard values of only one call alive)."""
    values: List[Any] = [None] * len(draws)
    groups: Dict[Tuple[str, int], List[int]] = {}
    for index, draw in enumerate(draws):
        groups.setdefault((draw.kind, draw.size), []).append(index)
    for (kind, size), indices in groups.items():
        per_call = 1 if kind == "truncated" else max(1, _BATCH_BLOCKS // max(1, (size + 3) // 4))
        for start in range(0, len(indices), per_call):
            chunk = indices[start:start + per_call]
            for index, row in zip(chunk, _standard(kind, size, [draws[i].seed for i in chunk])):
                values[index] = draws[index].finish(row)
    return values


def compute_fans(shape: Sequence[int]) -> Tuple[int, int]:
    """(fan_in, fan_out) as Keras counts them: the last two axes, times the product of the others."""
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return int(shape[0]), int(shape[0])
    receptive = int(np.prod(shape[:-2], dtype=np.int64)) if len(shape) > 2 else 1
    return int(shape[-2]) * receptive, int(shape[-1]) * receptive


def _scaled(kind: str, shape, seed: int, scale: float, offset: float) -> _Draw:
    return _Draw(kind, _size(shape), seed, lambda values: values * np.float32(scale) + np.float32(offset))


def _uniform(shape, seed, minval, maxval) -> _Draw:
    low = np.float32(minval)
    return _scaled("uniform", shape, seed, np.float32(maxval) - low, low)  # u * (max - min) + min, in float32


def _variance_scaling(shape, seed, scale=1.0, mode="fan_in", distribution="truncated_normal") -> Optional[_Draw]:
    if not isinstance(scale, (int, float)) or isinstance(scale, bool) or not scale > 0 \
            or mode not in ("fan_in", "fan_out", "fan_avg") or not isinstance(distribution, str):
        return None
    distribution = {"normal": "truncated_normal"}.get(distribution.lower(), distribution.lower())
    fan_in, fan_out = compute_fans(shape)
    scale = float(scale) / max(1.0, {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[mode])
    if distribution == "truncated_normal":
        return _scaled("truncated", shape, seed, math.sqrt(scale) / 0.87962566103423978, 0.0)
    if distribution == "untruncated_normal":
        return _scaled("normal", shape, seed, math.sqrt(scale), 0.0)
    if distribution == "uniform":
        limit = math.sqrt(3.0 * scale)
        return _uniform(shape, seed, -limit, limit)
    return None


def _orthogonal(shape, seed, gain=1.0) -> Optional[_Draw]:
    if len(shape) < 2:
        return None
    rows, cols = int(np.prod(shape[:-1], dtype=np.int64)), int(shape[-1])
    flat = (max(rows, cols), min(rows, cols))

    def finish(normal):
        q, r = np.linalg.qr(normal.reshape(flat).astype(np.float64))
        q = q.astype(np.float32) * np.sign(np.diag(r)).astype(np.float32)
        return np.float32(gain) * (q.T if rows < cols else q)
    return _Draw("normal", flat[0] * flat[1], seed, finish)


_VARIANCE_SCALING = {
    "GlorotUniform": (1.0, "fan_avg", "uniform"), "GlorotNormal": (1.0, "fan_avg", "truncated_normal"),
    "HeUniform": (2.0, "fan_in", "uniform"), "HeNormal": (2.0, "fan_in", "truncated_normal"),
    "LecunUniform": (1.0, "fan_in", "uniform"), "LecunNormal": (1.0, "fan_in", "truncated_normal"),
}
_ARGUMENTS = {  # the arguments (and Keras's defaults) each reimplemented class takes besides `seed`
    "RandomNormal": {"mean": 0.0, "stddev": 0.05}, "TruncatedNormal": {"mean": 0.0, "stddev": 0.05},
    "RandomUniform": {"minval": -0.05, "maxval": 0.05}, "Orthogonal": {"gain": 1.0},
    "VarianceScaling": {"scale": 1.0, "mode": "fan_in", "distribution": "truncated_normal"},
    "Zeros": {}, "Ones": {}, "Constant": {"value": 0.0}, **{name: {} for name in _VARIANCE_SCALING},
}
_RANDOM = set(_ARGUMENTS) - {"Zeros", "Ones", "Constant"}


def _size(shape) -> int:
    return int(np.prod(shape, dtype=np.int64))


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _draw(name: str, args: Dict[str, Any], shape: Tuple[int, ...], seed: int) -> Union[np.ndarray, _Draw, None]:
    if name == "Zeros":
        return np.zeros(shape, np.float32)
    if name == "Ones":
        return np.ones(shape, np.float32)
    if name == "Constant":
        return np.full(shape, np.float32(args["value"])) if _number(args["value"]) else None
    if name in _VARIANCE_SCALING:
        return _variance_scaling(shape, seed, *_VARIANCE_SCALING[name])
    if name == "VarianceScaling":
        return _variance_scaling(shape, seed, args["scale"], args["mode"], args["distribution"])
    if not all(_number(value) for value in args.values()):
        return None
    if name == "RandomNormal":
        return _scaled("normal", shape, seed, args["stddev"], args["mean"])
    if name == "TruncatedNormal":
        return _scaled("truncated", shape, seed, args["stddev"], args["mean"])
    if name == "RandomUniform":
        return _uniform(shape, seed, args["minval"], args["maxval"])
    if name == "Orthogonal":
        return _orthogonal(shape, seed, args["gain"])
    return None


def _plan(spec: Any, shape: Tuple[int, ...], dtype: str, seed: Optional[int], layer: str,
          option: str) -> Union[np.ndarray, _Draw, None]:
    """`initial_value`'s array, or the draw that makes it, or None."""
    if dtype != "float32":
        return None
    if _number(spec):
        return np.full(shape, np.float32(float(spec)))
    name, args = parse_initializer(spec, layer, option)  # the TF backend's parse: its errors, unchanged
    defaults = _ARGUMENTS.get(name)
    if defaults is None or not set(args) <= set(defaults) | {"seed"}:
        return None
    if name in _RANDOM:
        seed = args.pop("seed", seed)
        if not isinstance(seed, int) or isinstance(seed, bool) or not -2 ** 63 <= seed < 2 ** 63:
            return None  # no seed (Keras: a random one) or one Keras would read differently
    elif "seed" in args:
        return None  # Keras would refuse the argument
    return _draw(name, {**defaults, **args}, shape, seed)


def initial_values(requests: Sequence[Tuple[Any, Sequence[int], str, Optional[int], str, str]],
                   bit_identical_only: bool = False) -> List[Optional[np.ndarray]]:
    """`initial_value` of each (spec, shape, dtype, seed, layer, option), the random draws of one kind and size
    made together (`_BATCH_BLOCKS`): a network's parameters at once. With `bit_identical_only`, None also for the
    normal draws (equal to TensorFlow's to float32 precision, not bit for bit): what the TensorFlow backend
    takes from here."""
    shapes = [tuple(int(d) for d in request[1]) for request in requests]
    plans = [_plan(request[0], shape, *request[2:]) for request, shape in zip(requests, shapes)]
    if bit_identical_only:
        plans = [None if isinstance(plan, _Draw) and plan.kind != "uniform" else plan for plan in plans]
    drawn = iter(_finished([plan for plan in plans if isinstance(plan, _Draw)]))
    values = [next(drawn) if isinstance(plan, _Draw) else plan for plan in plans]
    return [None if value is None else value.reshape(shape).astype(np.float32, copy=False)
            for value, shape in zip(values, shapes)]


def initial_values_else(requests: Sequence[Tuple[Any, Sequence[int], str, Optional[int], str, str]],
                        fallback: Callable[..., Any], bit_identical_only: bool = False) -> List[Any]:
    """`initial_values`, with `fallback(*request)` (the Keras initializer) for each request not drawn here."""
    values = initial_values(requests, bit_identical_only)
    return [fallback(*request) if value is None else value for request, value in zip(requests, values)]


def initial_value(spec: Any, shape: Sequence[int], dtype: str, seed: Optional[int], layer: str,
                  option: str) -> Optional[np.ndarray]:
    """The float32 array TensorFlow's initializer `spec` (`backends/tensorflow/initializers.py`) gives for
    `shape` and `seed`, or None where this module does not reimplement it (the caller uses TensorFlow's)."""
    return initial_values([(spec, shape, dtype, seed, layer, option)])[0]
