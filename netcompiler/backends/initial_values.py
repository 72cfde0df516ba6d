"""Initial values of parameters drawn with NumPy, the same numbers as the TensorFlow backend's Keras initializers.

The PyTorch backend starts from the values the TensorFlow backend would (same config, same seed) without loading
TensorFlow. Keras 3 on TensorFlow draws an initializer with the integer seed `s` through TensorFlow's stateless
random ops on the CPU: the seed pair ``[s mod (2**31 - 2), 0]`` is hashed into a Philox-4x32-10 key and counter
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
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..initializer_spec import parse_initializer

_MULTIPLIERS = np.array([[0xD2511F53], [0xCD9E8D57]], np.uint64)  # of words 0 and 2
_W_A, _W_B = 0x9E3779B9, 0xBB67AE85
_MASK32, _SHIFT32 = np.uint64(0xFFFFFFFF), np.uint64(32)
_TRUNCATED_GROUP_BLOCKS = 256  # Philox blocks reserved per group of 4 truncated-normal outputs (TF's CPU kernel)


def _philox(multiplied: np.ndarray, low: np.ndarray, key: Tuple[int, int]) -> Tuple[np.ndarray, np.ndarray]:
    """Philox-4x32-10 of counters given as words 0 and 2 (`multiplied`, uint64 [2, n] holding uint32, changed in
    place) and words 1 and 3 (`low`, uint32 [2, n]): the blocks' words in the same two forms.

    A round is three NumPy operations whatever n, so that parameters of a few thousand values, drawn one by one,
    cost few calls: the products go to one of two uint64 buffers, whose uint32 halves are read through views
    (high halves and the previous round's low halves, swapped between words 0 and 2) instead of being shifted
    and masked out."""
    n = multiplied.shape[1]
    k0, k1 = key
    keys = [np.array([[(k0 + r * _W_A) & 0xFFFFFFFF], [(k1 + r * _W_B) & 0xFFFFFFFF]], np.uint32) for r in range(10)]
    buffers = []
    for _ in range(2):
        product = np.empty((2, n), np.uint64)
        halves = product.view(np.uint32).reshape(2, n, 2)[::-1]  # little-endian: [..., 0] low, [..., 1] high
        buffers.append((product, halves[..., 1], halves[..., 0]))
    mixed = np.empty((2, n), np.uint32)
    for r in range(10):
        product, high, next_low = buffers[r & 1]  # the other buffer holds `low`, this round's input
        np.multiply(multiplied, _MULTIPLIERS, out=product)
        np.bitwise_xor(high, low, out=mixed)  # words 0, 2 = high halves ^ words 1, 3 ^ key
        np.bitwise_xor(mixed, keys[r], out=multiplied)
        low = next_low  # words 1, 3 = low halves
    return multiplied, low


def _philox_block(words: Tuple[int, int, int, int], key: Tuple[int, int]) -> Tuple[int, int, int, int]:
    """Philox-4x32-10 of one counter, in Python integers (~3 us): `_philox` on one block costs its 30 NumPy calls
    (~30 us), half of what drawing a parameter of a few thousand values costs."""
    c0, c1, c2, c3 = words
    k0, k1 = key
    for _ in range(10):
        product0, product2 = c0 * 0xD2511F53, c2 * 0xCD9E8D57
        c0, c1 = (product2 >> 32) ^ c1 ^ k0, product2 & 0xFFFFFFFF
        c2, c3 = (product0 >> 32) ^ c3 ^ k1, product0 & 0xFFFFFFFF
        k0, k1 = (k0 + _W_A) & 0xFFFFFFFF, (k1 + _W_B) & 0xFFFFFFFF
    return c0, c1, c2, c3


def key_counter(seed: int) -> Tuple[Tuple[int, int], np.ndarray]:
    """Philox key and start counter (4 words) of Keras's integer seed, as TensorFlow's stateless ops make them."""
    seed0 = seed % (2 ** 31 - 2)  # Keras: int64 seed pair -> floormod(., int32 max - 1) -> int32
    seed1 = 0
    mix = _philox_block((seed0 & 0xFFFFFFFF, seed0 >> 32, seed1 & 0xFFFFFFFF, seed1 >> 32), (0x3EC8F720, 0x02461E29))
    return (mix[0], mix[1]), np.array([0, 0, mix[2], mix[3]], np.uint64)


def _blocks_at(offsets: np.ndarray, key, counter) -> np.ndarray:
    """The words of the Philox blocks at `counter + offsets` (a 128-bit addition): uint32 [n, 4]."""
    n = len(offsets)
    multiplied, low = np.empty((2, n), np.uint64), np.empty((2, n), np.uint32)
    if not n or int(offsets.max()) + int(counter[0]) <= 0xFFFFFFFF:  # no carry out of word 0
        np.add(offsets.astype(np.uint64), counter[0], out=multiplied[0])
        multiplied[1], low[0], low[1] = counter[2], counter[1], counter[3]
    else:
        carry = offsets.astype(np.uint64)
        for k, row in ((0, multiplied[0]), (1, low[0]), (2, multiplied[1]), (3, low[1])):
            total = carry + counter[k]
            carry = total >> _SHIFT32
            row[...] = total & _MASK32
    multiplied, low = _philox(multiplied, low, key)
    words = np.empty((n, 4), np.uint32)
    words[:, 0::2], words[:, 1::2] = multiplied.T, low.T
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


def standard_uniform(size: int, seed: int) -> np.ndarray:
    """`size` float32 values of TF's stateless uniform [0, 1) for `seed`."""
    key, counter = key_counter(seed)
    return _unit_floats(_blocks_at(np.arange((size + 3) // 4), key, counter)).reshape(-1)[:size]


def standard_normal(size: int, seed: int) -> np.ndarray:
    """`size` float32 values of TF's stateless standard normal for `seed`."""
    key, counter = key_counter(seed)
    words = _blocks_at(np.arange((size + 3) // 4), key, counter)
    out = np.empty((len(words), 4), np.float32)
    out[:, 0], out[:, 1] = _box_muller(words[:, 0], words[:, 1])
    out[:, 2], out[:, 3] = _box_muller(words[:, 2], words[:, 3])
    return out.reshape(-1)[:size]


def standard_truncated_normal(size: int, seed: int) -> np.ndarray:
    """`size` float32 values of TF's stateless truncated standard normal (|z| < 2) for `seed`."""
    key, counter = key_counter(seed)
    groups = (size + 3) // 4
    out = np.zeros((groups, 4), np.float32)
    filled = np.zeros(groups, np.int64)
    pending = np.arange(groups)
    block = 0
    while len(pending):
        words = _blocks_at(pending * _TRUNCATED_GROUP_BLOCKS + block, key, counter)
        candidates = np.empty((len(pending), 4), np.float32)
        candidates[:, 0], candidates[:, 1] = _box_muller(words[:, 0], words[:, 1])
        candidates[:, 2], candidates[:, 3] = _box_muller(words[:, 2], words[:, 3])
        for k in range(4):  # in the order the kernel takes them
            take = (np.abs(candidates[:, k]) < np.float32(2.0)) & (filled[pending] < 4)
            rows = pending[take]
            out[rows, filled[rows]] = candidates[take, k]
            filled[rows] += 1
        pending = pending[filled[pending] < 4]
        block += 1
    return out.reshape(-1)[:size]


def compute_fans(shape: Sequence[int]) -> Tuple[int, int]:
    """(fan_in, fan_out) as Keras counts them: the last two axes, times the product of the others."""
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return int(shape[0]), int(shape[0])
    receptive = int(np.prod(shape[:-2], dtype=np.int64)) if len(shape) > 2 else 1
    return int(shape[-2]) * receptive, int(shape[-1]) * receptive


def _scaled(values: np.ndarray, scale: float, offset: float) -> np.ndarray:
    return values * np.float32(scale) + np.float32(offset)


def _uniform(shape, seed, minval, maxval):
    low, high = np.float32(minval), np.float32(maxval)
    return standard_uniform(_size(shape), seed) * (high - low) + low


def _variance_scaling(shape, seed, scale=1.0, mode="fan_in", distribution="truncated_normal"):
    if not isinstance(scale, (int, float)) or isinstance(scale, bool) or not scale > 0 \
            or mode not in ("fan_in", "fan_out", "fan_avg") or not isinstance(distribution, str):
        return None
    distribution = {"normal": "truncated_normal"}.get(distribution.lower(), distribution.lower())
    fan_in, fan_out = compute_fans(shape)
    scale = float(scale) / max(1.0, {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[mode])
    if distribution == "truncated_normal":
        return _scaled(standard_truncated_normal(_size(shape), seed), math.sqrt(scale) / 0.87962566103423978, 0.0)
    if distribution == "untruncated_normal":
        return _scaled(standard_normal(_size(shape), seed), math.sqrt(scale), 0.0)
    if distribution == "uniform":
        limit = math.sqrt(3.0 * scale)
        return _uniform(shape, seed, -limit, limit)
    return None


def _orthogonal(shape, seed, gain=1.0):
    if len(shape) < 2:
        return None
    rows, cols = int(np.prod(shape[:-1], dtype=np.int64)), int(shape[-1])
    flat = (max(rows, cols), min(rows, cols))
    normal = standard_normal(flat[0] * flat[1], seed).reshape(flat)
    q, r = np.linalg.qr(normal.astype(np.float64))
    q = q.astype(np.float32) * np.sign(np.diag(r)).astype(np.float32)
    if rows < cols:
        q = q.T
    return np.float32(gain) * q.reshape(shape)


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


def _draw(name: str, args: Dict[str, Any], shape: Tuple[int, ...], seed: int) -> Optional[np.ndarray]:
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
        return _scaled(standard_normal(_size(shape), seed), args["stddev"], args["mean"]).reshape(shape)
    if name == "TruncatedNormal":
        return _scaled(standard_truncated_normal(_size(shape), seed), args["stddev"], args["mean"]).reshape(shape)
    if name == "RandomUniform":
        return _uniform(shape, seed, args["minval"], args["maxval"]).reshape(shape)
    if name == "Orthogonal":
        return _orthogonal(shape, seed, args["gain"])
    return None


def initial_value(spec: Any, shape: Sequence[int], dtype: str, seed: Optional[int], layer: str,
                  option: str) -> Optional[np.ndarray]:
    """The float32 array TensorFlow's initializer `spec` (`backends/tensorflow/initializers.py`) gives for
    `shape` and `seed`, or None where this module does not reimplement it (the caller uses TensorFlow's)."""
    if dtype != "float32":
        return None
    shape = tuple(int(d) for d in shape)
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
    value = _draw(name, {**defaults, **args}, shape, seed)
    return None if value is None else value.reshape(shape).astype(np.float32, copy=False)
