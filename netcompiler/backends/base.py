"""The `Backend` interface: the raw operations a framework provides to the op layer.

A backend works on raw tensors of its framework (`tf.Tensor`, `torch.Tensor`,
...). Axes are given as ints here: the op layer (`netcompiler.frontend`) has
already resolved Dims to axes and computed every output template, so a backend
never decides a shape. Methods are static: a backend has no state. Anything a
backend does not provide raises `NotImplementedError` naming the operation.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, List, Optional, Sequence, Tuple


_NO_SCOPE = contextlib.nullcontext()
"""The scope of backends without one (a nullcontext can be entered again and again)."""


def _missing(backend, what: str):
    return NotImplementedError(f"the {backend.name} backend does not implement '{what}'")


class Backend:
    """Base of every backend; subclasses override what their framework can do."""

    name = "abstract"
    executing_eagerly_always = False
    """True for frameworks without graphs (PyTorch): `cond` and `while_loop` can run in Python."""

    # --- values and shapes ----------------------------------------------------------------
    @classmethod
    def is_raw(cls, value: Any) -> bool:
        """Whether `value` is a raw tensor of this backend."""
        raise _missing(cls, "is_raw")

    @classmethod
    def convert_to_raw(cls, value: Any, dtype: str) -> Any:
        """A raw tensor of `value` (a number, NumPy array or raw tensor) with `dtype`."""
        raise _missing(cls, "convert_to_raw")

    @classmethod
    def to_numpy(cls, raw: Any):
        raise _missing(cls, "to_numpy")

    @classmethod
    def dtype_name(cls, raw: Any) -> str:
        """The dtype of a raw tensor as a name ("float32")."""
        raise _missing(cls, "dtype_name")

    @classmethod
    def autocast_dtype_name(cls) -> Optional[str]:
        """The dtype float32 values are computed in right now ("bfloat16" under PyTorch's bfloat16 autocast:
        mixed precision, `engine/precision.py`), or None: a value of that dtype stands for a float32 template."""
        return None

    @classmethod
    def get_known_shape_raw(cls, raw: Any) -> Tuple[Optional[int], ...]:
        """The static shape: ints where known, None elsewhere (no ops are created)."""
        raise _missing(cls, "get_known_shape_raw")

    @classmethod
    def get_shape_tuple_raw(cls, raw: Any) -> Tuple[Any, ...]:
        """The shape: ints where static, scalar raw tensors where not."""
        raise _missing(cls, "get_shape_tuple_raw")

    @classmethod
    def fill_raw(cls, shape: Sequence[Any], value: Any, dtype: str) -> Any:
        raise _missing(cls, "fill_raw")

    @classmethod
    def range_raw(cls, limit: Any, dtype: str) -> Any:
        """[0, 1, ..., limit - 1]."""
        raise _missing(cls, "range_raw")

    # --- elementwise --------------------------------------------------------------------------
    @classmethod
    def combine_raw(cls, a: Any, kind: str, b: Any) -> Any:
        """a KIND b with broadcasting; kind: add, sub, mul, truediv, floordiv, mod, pow, maximum, minimum,
        logical_and, logical_or, logical_xor, squared_difference."""
        raise _missing(cls, f"combine_raw {kind}")

    @classmethod
    def compare_raw(cls, a: Any, kind: str, b: Any) -> Any:
        """a KIND b; kind: equal, not_equal, less, less_equal, greater, greater_equal."""
        raise _missing(cls, f"compare_raw {kind}")

    @classmethod
    def where_raw(cls, cond: Any, true_: Any, false_: Any) -> Any:
        raise _missing(cls, "where_raw")

    @classmethod
    def activation_raw(cls, raw: Any, func: str) -> Any:
        """An elementwise function by name: tanh, sigmoid, relu, exp, log, abs, neg, logical_not, ..."""
        raise _missing(cls, f"activation_raw {func}")

    @classmethod
    def cast_raw(cls, raw: Any, dtype: str) -> Any:
        raise _missing(cls, "cast_raw")

    @classmethod
    def clip_by_value_raw(cls, raw: Any, low: Any, high: Any) -> Any:
        raise _missing(cls, "clip_by_value_raw")

    @classmethod
    def stop_gradient_raw(cls, raw: Any) -> Any:
        raise _missing(cls, "stop_gradient_raw")

    @classmethod
    def scaled_gradient_raw(cls, raw: Any, scale: float) -> Any:
        """Identity forward; the gradient times `scale`."""
        raise _missing(cls, "scaled_gradient_raw")

    @classmethod
    def filtered_gradient_raw(cls, raw: Any, threshold: float, reduce_axes: Sequence[int]) -> Any:
        """Identity forward; the gradient zeroed where max(grad ** 2) over `reduce_axes` (kept as size 1)
        is >= `threshold`."""
        raise _missing(cls, "filtered_gradient_raw")

    @classmethod
    def synthetic_gradient_raw(cls, raw: Any, synthetic: Any, meta_scale: float) -> Any:
        """Identity forward of `raw`; backward, `raw` gets `synthetic` (its shape) as gradient instead of the
        incoming g, and `synthetic` gets meta_scale * 2 (synthetic - g) / size: the gradient of the meta-loss
        meta_scale * mean((synthetic - stop_gradient(g)) ** 2) that trains what predicts the gradient."""
        raise _missing(cls, "synthetic_gradient_raw")

    @classmethod
    def host_callback_raw(cls, fn: Callable[..., None], raws: Sequence[Any]) -> Any:
        """Calls `fn` with the values of `raws` as NumPy arrays when they are computed (a side effect: a line
        printed, a file written). Returns a handle for `with_dependencies_raw` (None where it ran at once)."""
        raise _missing(cls, "host_callback_raw")

    # --- layout ----------------------------------------------------------------------------------
    @classmethod
    def reshape_raw(cls, raw: Any, shape: Sequence[Any]) -> Any:
        raise _missing(cls, "reshape_raw")

    @classmethod
    def reshape_like_raw(cls, raw: Any, like: Any) -> Any:
        """`raw` reshaped to the shape of `like` (same element count)."""
        return cls.reshape_raw(raw, cls.get_shape_tuple_raw(like))

    @classmethod
    def transpose_raw(cls, raw: Any, perm: Sequence[int]) -> Any:
        raise _missing(cls, "transpose_raw")

    @classmethod
    def expand_dims_raw(cls, raw: Any, axis: int) -> Any:
        raise _missing(cls, "expand_dims_raw")

    @classmethod
    def squeeze_raw(cls, raw: Any, axes: Sequence[int]) -> Any:
        raise _missing(cls, "squeeze_raw")

    @classmethod
    def broadcast_to_raw(cls, raw: Any, shape: Sequence[Any]) -> Any:
        raise _missing(cls, "broadcast_to_raw")

    @classmethod
    def concat_raw(cls, raws: Sequence[Any], axis: int) -> Any:
        raise _missing(cls, "concat_raw")

    @classmethod
    def stack_raw(cls, raws: Sequence[Any], axis: int) -> Any:
        raise _missing(cls, "stack_raw")

    @classmethod
    def split_raw(cls, raw: Any, sizes: Sequence[int], axis: int) -> Sequence[Any]:
        raise _missing(cls, "split_raw")

    @classmethod
    def pad_raw(cls, raw: Any, paddings: Sequence[Tuple[Any, Any]], mode: str, value: Any) -> Any:
        """Pads every axis by (left, right); mode: constant, reflect, replicate (edge)."""
        raise _missing(cls, "pad_raw")

    @classmethod
    def slice_raw(cls, raw: Any, axis: int, start: Any, end: Any, step: Any) -> Any:
        """raw[..., start:end:step, ...] along `axis` (Python slice semantics)."""
        raise _missing(cls, "slice_raw")

    @classmethod
    def top_k_raw(cls, raw: Any, k: int) -> Any:
        """The `k` largest entries along the last axis, largest first: (values, int32 indices)."""
        raise _missing(cls, "top_k_raw")

    @classmethod
    def gather_raw(cls, raw: Any, indices: Any, axis: int, batch_dims: int) -> Any:
        """Like tf.gather: the first `batch_dims` axes of raw and indices are shared."""
        raise _missing(cls, "gather_raw")

    @classmethod
    def reverse_sequence_raw(cls, raw: Any, lengths: Any, seq_axis: int, batch_axis: int) -> Any:
        raise _missing(cls, "reverse_sequence_raw")

    @classmethod
    def sequence_mask_raw(cls, lengths: Any, maxlen: Any) -> Any:
        """Bool [*lengths.shape, maxlen]: position < length."""
        raise _missing(cls, "sequence_mask_raw")

    @classmethod
    def frames_all_valid_raw(cls, lengths: Any, maxlen: Any) -> bool:
        """True if it is known now, without tracing or waiting on a device, that every length is >= maxlen (no
        frame is padding, so no mask is needed); False where that is not known (a graph being traced)."""
        return False

    @classmethod
    def frame_raw(cls, raw: Any, size: int, stride: int, axis: int) -> Any:
        """The windows of `size` frames along `axis`, every `stride` frames, whole ones only (like
        tf.signal.frame): `axis` becomes the window count and a new axis of `size` follows it."""
        raise _missing(cls, "frame_raw")

    # --- reductions and products ----------------------------------------------------------------------
    @classmethod
    def reduce_raw(cls, raw: Any, mode: str, axes: Sequence[int]) -> Any:
        """mode: sum, mean, max, min, prod, logsumexp, any, all, argmax, argmin (argmax/argmin: one axis)."""
        raise _missing(cls, f"reduce_raw {mode}")

    @classmethod
    def matmul_raw(cls, a: Any, b: Any) -> Any:
        """Batched matmul (shared..., I, J) x (shared..., J, K) -> (shared..., I, K)."""
        raise _missing(cls, "matmul_raw")

    @classmethod
    def softmax_raw(cls, raw: Any, axis: int, log: bool) -> Any:
        raise _missing(cls, "softmax_raw")

    @classmethod
    def cumsum_raw(cls, raw: Any, axis: int, reverse: bool) -> Any:
        raise _missing(cls, "cumsum_raw")

    # --- convolution and pooling -------------------------------------------------------------------
    @classmethod
    def conv_raw(cls, raw: Any, filter_raw: Any, *, strides: Sequence[int], dilation_rate: Sequence[int],
                 padding: str, groups: int) -> Any:
        """N-D convolution (cross-correlation) of `raw` [N, spatial..., C_in] with `filter_raw`
        [*window, C_in // groups, C_out] -> [N, spatial'..., C_out]; padding "valid" or "same" (TF's rule); with
        `groups`, input channels and C_out are split into that many consecutive groups."""
        raise _missing(cls, "conv_raw")

    @classmethod
    def transposed_conv_raw(cls, raw: Any, filter_raw: Any, *, strides: Sequence[int]) -> Any:
        """N-D transposed convolution of `raw` [N, spatial..., C_in] with `filter_raw` [*window, C_in, C_out],
        unpadded: each input frame i adds its window at output frames i * stride ... i * stride + window - 1, so an
        axis of n frames gives (n - 1) * stride + window -> [N, spatial'..., C_out]."""
        raise _missing(cls, "transposed_conv_raw")

    @classmethod
    def pool_raw(cls, raw: Any, mode: str, pool_size: Sequence[int], *, strides: Sequence[int],
                 dilation_rate: Sequence[int], padding: str) -> Any:
        """N-D pooling of `raw` [N, spatial..., C]; mode "max" or "avg"; padding "valid" or "same"."""
        raise _missing(cls, f"pool_raw {mode}")

    # --- one-kernel forms, optional (None: the frontend op composes the same of the ops above) -------------------
    @classmethod
    def matmul_add_raw(cls, a: Any, b: Any, bias: Any) -> Optional[Any]:
        """`matmul_raw(a, b)` plus `bias` over the result's last axis in one kernel (a, b 2-D), where the backend
        has one. None (the default): `rf.matmul`'s caller adds the bias itself."""
        return None

    @classmethod
    def layer_norm_raw(cls, raw: Any, scale: Any, bias: Any, eps: float) -> Optional[Any]:
        """(raw - mean) / sqrt(variance + eps) * scale + bias over the last axis in one kernel, where the backend
        has one (`bias` may be None). None (the default): `rf.fused_layer_norm`'s caller composes it of moments."""
        return None

    # --- recurrences (time-major; `xw` [T, N, k*n] is x W + b of every frame, in rf.lstm/rf.gru's gate order) --
    @classmethod
    def lstm_sequences_raw(cls, x: Any, ff_weight: Any, bias: Any, rec_weight: Any, state_h: Any, state_c: Any,
                           lengths: Any) -> Optional[Tuple[Any, Any, Any]]:
        """An LSTM over whole sequences in one kernel, where the backend has one: `x` [T, N, in] unprojected,
        `ff_weight` [in, 4n], `bias` [4n], `rec_weight` [n, 4n] (blocks c, i, f, o), `lengths` an int or [N] / []
        -> (h of every frame [T, N, n], zero after each sequence's end; h and cell after each sequence's last
        frame [N, n], the initial state for an empty one). None (the default): `rf.lstm` runs `lstm_raw`."""
        return None

    @classmethod
    def lstm_raw(cls, xw: Any, rec_weight: Any, state_h: Any, state_c: Any) -> Tuple[Any, Any]:
        """An LSTM over axis 0 of `xw` (gate blocks c, i, f, o) with recurrent weights `rec_weight` [n, 4n] from
        the state (`state_h`, `state_c`) [N, n]: h and the cell of every step, [T, N, n] each."""
        raise _missing(cls, "lstm_raw")

    @classmethod
    def gru_raw(cls, xw: Any, rec_weight: Any, state: Any) -> Any:
        """A GRU over axis 0 of `xw` (gate blocks z, r, h; the reset gate applied to the state before the
        recurrent matmul) with `rec_weight` [n, 3n] from `state` [N, n]: h of every step, [T, N, n]."""
        raise _missing(cls, "gru_raw")

    @classmethod
    def rnn_raw(cls, xw: Any, rec_weight: Any, state: Any, activation: Callable[[Any], Any]) -> Any:
        """h' = activation(xw[t] + h U) over axis 0 of `xw` [T, N, n] with U = `rec_weight` [n, n] from `state`
        [N, n]; `activation` maps raw [N, n] to raw [N, n]. h of every step, [T, N, n]."""
        raise _missing(cls, "rnn_raw")

    # --- randomness and training -----------------------------------------------------------------
    @classmethod
    def dropout_raw(cls, raw: Any, rate: float, noise_shape: Optional[Sequence[Any]]) -> Any:
        raise _missing(cls, "dropout_raw")

    @classmethod
    def set_random_seed_raw(cls, seed: int) -> None:
        """Restarts the framework's random state (dropout masks, `random_raw`) from `seed`. A backend without a
        random state of its own (one that builds a graph for another backend to run) has nothing to restart."""

    @classmethod
    def random_raw(cls, shape: Sequence[Any], distribution: str, dtype: str, **kwargs) -> Any:
        """distribution: uniform (minval, maxval; `seed`: draws from a random stream of that seed, restarted by
        `set_random_seed_raw`), normal (mean, stddev), truncated_normal."""
        raise _missing(cls, f"random_raw {distribution}")

    @classmethod
    def custom_gradient_raw(cls, forward: Callable, raws: Sequence[Any]) -> Any:
        raise _missing(cls, "custom_gradient_raw")

    # --- control flow ---------------------------------------------------------------------------------
    @classmethod
    def cond_raw(cls, pred: Any, true_fn: Callable[[], Any], false_fn: Callable[[], Any]) -> Any:
        raise _missing(cls, "cond_raw")

    @classmethod
    def while_loop_raw(cls, cond: Callable[..., Any], body: Callable[..., Any], initial: Any,
                       shapes: Optional[Sequence[Tuple[Optional[int], ...]]] = None) -> Any:
        """Runs `body` while `cond` holds; `initial` and the body's result are lists of raw tensors. `shapes`: per
        loop variable, its shape with None where the size may change from step to step."""
        raise _missing(cls, "while_loop_raw")

    @classmethod
    def shared_function_raw(cls, fn: Callable[..., Any]) -> Optional[Callable[..., Any]]:
        """`fn` (raw tensors -> raw tensors) traced once and called for each use, or None where the framework
        has no such functions (eager execution): callers then compute inline."""
        return None

    @classmethod
    def scan_raw(cls, step: Callable[[Any, Any], Any], elems: Any, initial: Any) -> Any:
        """Like tf.scan over axis 0 of the nest `elems`; returns the stacked states."""
        raise _missing(cls, "scan_raw")

    @classmethod
    def with_dependencies_raw(cls, raw: Any, dependencies: Sequence[Any]) -> Any:
        """`raw`, computed only after the `dependencies` (update handles; None entries are skipped) ran."""
        raise _missing(cls, "with_dependencies_raw")

    # --- parameters -------------------------------------------------------------------------------------
    @classmethod
    def create_parameter_raw(cls, name: str, shape: Sequence[int], dtype: str, initial_value: Any,
                             trainable: bool) -> Any:
        raise _missing(cls, "create_parameter_raw")

    @classmethod
    def assign_raw(cls, variable: Any, value: Any) -> None:
        """Sets a parameter's value (a NumPy array of its shape)."""
        raise _missing(cls, "assign_raw")

    @classmethod
    def parameter_assign_raw(cls, param: Any, value: Any, op: str = "assign") -> Any:
        """Inside a pass: sets the parameter `param` to the raw tensor `value` (op "assign") or adds it ("add");
        returns a handle of the update for `with_dependencies_raw` (None where it has no handle)."""
        raise _missing(cls, f"parameter_assign_raw {op}")

    @classmethod
    def is_trainable(cls, raw: Any) -> bool:
        raise _missing(cls, "is_trainable")

    @classmethod
    def parameter_container(cls, params: Any) -> Any:
        """What checkpoints save the parameters (name -> variable) through."""
        raise _missing(cls, "parameter_container")

    @classmethod
    def input_signature(cls, extern: Any) -> Any:
        """How compiled steps declare their inputs (extern data templates), for graph backends."""
        raise _missing(cls, "input_signature")

    @classmethod
    def initial_value_raw(cls, init: Any, shape: Sequence[int], dtype: str, seed: int, layer: str,
                          option: str) -> Any:
        """The initial value of a parameter from an initializer spec (a number, a name, a call string, a dict)."""
        raise _missing(cls, "initial_value_raw")

    @classmethod
    def initial_values_raw(cls, requests: Sequence[Tuple[Any, Sequence[int], str, int, str, str]]) -> List[Any]:
        """`initial_value_raw` of each (init, shape, dtype, seed, layer, option): a network's parameters at once,
        which a backend may draw together."""
        return [cls.initial_value_raw(*request) for request in requests]

    supports_parameter_groups = False
    """Whether equal parameters of many layers can be stored as one (`create_parameter_group_raw`)."""

    @classmethod
    def create_parameter_group_raw(cls, names: Sequence[str], values: Sequence[Any], dtype: str,
                                   trainable: bool) -> List[Any]:
        """Parameters `names` (initial `values` of one shape) stored together; each one a parameter as
        `create_parameter_raw`'s are for reading and setting its value, and saved under its own name."""
        raise _missing(cls, "create_parameter_group_raw")

    @classmethod
    def parameter_group_values_raw(cls, members: Sequence[Any]) -> List[Any]:
        """The values of all members of one group, in their order, read together (in a step)."""
        raise _missing(cls, "parameter_group_values_raw")

    @classmethod
    def parameter_storage_raw(cls, raw: Any) -> Any:
        """What holds parameter `raw`'s value (its group's variable for a group member): what gradients are taken
        of and optimizers update."""
        return raw

    @classmethod
    def name_scope_raw(cls, name: str):
        """A context manager naming the ops created in it (a no-op where ops have no names)."""
        return _NO_SCOPE

    @classmethod
    def emission_scope_raw(cls):
        """A context manager for emitting layers: the framework must run the code as written (it makes its control
        flow with `cond_raw` and `while_loop_raw`), not rewrite it (a no-op where nothing rewrites code)."""
        return _NO_SCOPE

    # --- user code ------------------------------------------------------------------------------------------
    @classmethod
    def eval_globals_raw(cls) -> dict:
        """The names that user code written for this framework (a config's `eval` string) gets, e.g. `tf`."""
        raise _missing(cls, "eval_globals_raw")

    # --- checks and losses ------------------------------------------------------------------------------------
    @classmethod
    def assert_equal_raw(cls, a: Any, b: Any, message: str) -> Any:
        """A check that fails with `message` at run time unless a == b everywhere; returns its handle for
        `with_dependencies_raw` (None where it ran at once)."""
        raise _missing(cls, "assert_equal_raw")

    @classmethod
    def boolean_mask_raw(cls, raw: Any, mask: Any) -> Any:
        """The entries of `raw` where the bool `mask` (over the leading axes of `raw`) is True, those axes
        flattened into one (row-major)."""
        raise _missing(cls, "boolean_mask_raw")

    @classmethod
    def one_hot_raw(cls, indices: Any, depth: int, dtype: str) -> Any:
        """[*indices.shape, depth]: 1 at each index, 0 elsewhere."""
        raise _missing(cls, "one_hot_raw")

    @classmethod
    def softmax_cross_entropy_with_logits_raw(cls, logits: Any, labels: Any) -> Any:
        """-sum(labels * log_softmax(logits)) over the last axis of `logits`; integer `labels` are class indices
        (the shape of `logits` without its last axis), float ones a distribution (the shape of `logits`)."""
        raise _missing(cls, "softmax_cross_entropy_with_logits_raw")

    @classmethod
    def sigmoid_cross_entropy_with_logits_raw(cls, logits: Any, labels: Any, pos_weight: Optional[float]) -> Any:
        """Elementwise -(w labels log sigmoid(logits) + (1 - labels) log(1 - sigmoid(logits))), w = pos_weight
        (None: 1)."""
        raise _missing(cls, "sigmoid_cross_entropy_with_logits_raw")

    @classmethod
    def ctc_loss_raw(cls, logits: Any, logit_lengths: Any, labels: Any, label_lengths: Any, blank_index: int) -> Any:
        """CTC negative log-likelihood [B] of `labels` [B, S] (with their lengths [B]) under time-major
        `logits` [T, B, classes] (unnormalised; with their lengths [B]); blank is class `blank_index`."""
        raise _missing(cls, "ctc_loss_raw")

    @classmethod
    def ctc_decode_raw(cls, logits: Any, lengths: Any, beam_width: int) -> Tuple[Any, Any]:
        """The best label sequences of time-major CTC `logits` [T, B, classes] (blank: the last class): greedy
        (repeats merged) for `beam_width` 1, else beam search. Int32 labels [B, S] and their lengths [B]."""
        raise _missing(cls, "ctc_decode_raw")

    @classmethod
    def collapse_repeated_raw(cls, labels: Any, lengths: Any) -> Tuple[Any, Any]:
        """Sequences [B, S] (lengths [B]) with each run of one value merged into one entry; their new lengths."""
        raise _missing(cls, "collapse_repeated_raw")

    @classmethod
    def edit_distance_raw(cls, a: Any, a_lengths: Any, b: Any, b_lengths: Any) -> Any:
        """Float32 [B]: the Levenshtein distance (not normalised) of the sequences a [B, Sa] and b [B, Sb]
        (lengths [B] each)."""
        raise _missing(cls, "edit_distance_raw")

    @classmethod
    def step_stack_new_raw(cls, dtype: str) -> Any:
        """An empty stack of per-step values of `dtype` that a `while_loop_raw` may carry as loop variable."""
        raise _missing(cls, "step_stack_new_raw")

    @classmethod
    def step_stack_write_raw(cls, stack: Any, index: Any, value: Any) -> Any:
        """`stack` with `value` as entry `index` (a scalar int32); returns the new stack."""
        raise _missing(cls, "step_stack_write_raw")

    @classmethod
    def step_stack_stack_raw(cls, stack: Any) -> Any:
        """The entries of `stack` stacked along a new axis 0."""
        raise _missing(cls, "step_stack_stack_raw")

    @classmethod
    def step_frames_raw(cls, x: Any) -> Any:
        """`x` split along axis 0 into frames that a loop reads one per step (`step_frame_raw`); reading a frame
        must not cost a gradient of the size of all of `x` per step (as a gather in a loop does)."""
        raise _missing(cls, "step_frames_raw")

    @classmethod
    def step_frame_raw(cls, frames: Any, index: Any) -> Any:
        """Frame `index` (a scalar int32) of `step_frames_raw`'s result."""
        raise _missing(cls, "step_frame_raw")
