"""The differential test of the frontend: every public op and module of `netcompiler.frontend` runs on TensorFlow
(eager) and on PyTorch with the same inputs (ragged batches, garbage on the padded frames) and the same parameters
(`rf.set_random_seed`), and the two must agree on the valid frames: outputs and gradients within 1e-5 (fp32),
integer and bool outputs exactly (`frontend_harness.run_both`). Where the layer-dict backend can record the op,
the case also runs through the network dict it becomes, which must give the direct TF losses and gradients
(`test_backend_layers`'s helpers); the ops it refuses say why.

`test_every_public_op_and_module_has_a_case` fails when `dir(rf)` has a callable with no case here and no entry
in `EXCLUDED` (with the reason)."""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Optional, Tuple

import numpy as np
import pytest

from frontend_harness import HAVE_TORCH, Input, ragged_batch, run, run_both
from netcompiler import frontend as rf
from netcompiler.tensor import Dim, Tensor, batch_dim, padded_dim

B = batch_dim
T = Dim(None, name="time")
S = Dim(None, name="labels")
F = Dim(4, name="feat")
C = Dim(5, name="cls")
H = Dim(3, name="hidden")
T0 = Dim(None, name="time-with-empty")
S0 = Dim(None, name="labels-with-empty")
LENGTHS = {T: [5, 2, 4], S: [3, 1, 2], T0: [4, 0, 3], S0: [2, 0, 3]}
"""Ragged lengths; T0 and S0 hold an empty sequence."""
ONE = Dim(1, name="one")
WIN3 = Dim(3, name="win3")
G4, G3, G2, H1 = Dim(12, name="gates4"), Dim(9, name="gates3"), Dim(6, name="gates2"), Dim(3, name="gates1")
DEPTH = Dim(2, name="depth")

X = {"x": Input([B, T, F])}
XY = {"x": Input([B, T, F]), "y": Input([B, T, F])}
LOGITS = {"logits": Input([B, T, C]), "labels": Input([B, T], "int32", sparse_dim=C)}
LABELS = {"labels": Input([B, T], "int32", sparse_dim=C)}


def _soft(x: Tensor) -> Tensor:
    """The input squashed into (-3, 3), for ops that overflow on garbage-sized values."""
    return rf.tanh(x) * 3.0


def _pos(x: Tensor) -> Tensor:
    """A positive input (>= 0.5), for logarithms and roots."""
    return rf.abs(x) + 0.5


def _unpacked(packed: Tensor, frames: Dim) -> Tensor:
    """The frames `rf.pack_padded` packed over [B, T], put back in place (the padding 0.5)."""
    return rf.unpack_padded(packed, in_dim=frames, dims=[B, T], fill=0.5)


def _nonzero(i: Tensor) -> Tensor:
    """Integers without zeros (divisors): i where i > 0, else i - 3."""
    return rf.where(rf.compare(i, "greater", 0), i, i - 3)


class Params(rf.Module):
    """Parameters of the given dims (named as the keywords), Glorot-initialised, for calling ops directly."""

    def __init__(self, **dims):
        super().__init__()
        for name, param_dims in dims.items():
            param = rf.Parameter(param_dims)
            param.initial = rf.init.Glorot()
            setattr(self, name, param)


@dataclass
class Case:
    """One run of `call(model, **inputs)` (model: `build()`, or None) covering the frontend callables `ops`."""

    ops: Tuple[str, ...]
    call: Callable[..., Any]
    inputs: Dict[str, Input] = field(default_factory=lambda: X)
    build: Callable[[], Any] = lambda: None
    training: bool = False
    values: bool = True
    """False for random ops: the backends draw different numbers, so only dims, dtypes and ranges compare."""
    layer_dict: Optional[str] = None
    """None: also run through the layer dict; "refused: why" where the dict backend refuses it (checked);
    "not run: why" where this test does not run it there."""
    xfail: Optional[str] = None

    @property
    def id(self) -> str:
        return self.ops[0]

    @property
    def op(self) -> str:
        """The frontend name this case runs (its id without the variant after ':')."""
        return self.ops[0].split(":")[0]


def unary(name: str, prep=None, **kw) -> Case:
    """A case of `rf.<name>(prep(x))` (the op looked up at each call: the layer-dict recorder wraps it)."""
    return Case((name,), lambda m, x: getattr(rf, name)(prep(x) if prep else x), **kw)


def module(name: str, build, call=None, inputs=None, **kw) -> Case:
    return Case((name,), call or (lambda m, x: m(x)), inputs or X, build, **kw)


def _tensors(result) -> Dict[str, Tensor]:
    """An op's result (a Tensor, a tuple or dict of Tensors and Dims, nested) as name -> Tensor."""
    if isinstance(result, Tensor):
        return {"output": result}
    flat: Dict[str, Tensor] = {}
    items = result.items() if isinstance(result, dict) else enumerate(result)
    for key, value in items:
        if isinstance(value, Tensor):
            flat[f"out{key}"] = value
        elif isinstance(value, (tuple, list, dict)) and not isinstance(value, Dim):
            flat.update({f"out{key}.{k}": v for k, v in _tensors(value).items()})
    return flat


def _call(case: Case):
    return lambda model, **inputs: _tensors(case.call(model, **inputs))


REFUSED = "is not supported on the layer-dict backend"

CASES = [
    # --- elementwise math ---------------------------------------------------------------------------------
    *[unary(n) for n in ["abs", "cos", "sin", "elu", "erf", "gelu", "neg", "relu", "relu_square", "selu", "sigmoid",
                         "log_sigmoid", "silu", "swish", "softplus", "tanh", "identity", "sign", "ceil", "floor",
                         "round", "square", "stop_gradient", "is_finite"]],
    *[unary(n, _soft) for n in ["exp", "expm1"]],
    *[unary(n, _pos) for n in ["log", "log1p", "sqrt", "rsqrt", "safe_log"]],
    Case(("logical_not",), lambda m, x: rf.logical_not(rf.compare(x, "greater", 0.0))),
    Case(("activation",), lambda m, x: {a: rf.activation(x, a) for a in ["relu", "tanh", "sigmoid", "gelu"]}),
    Case(("cast",), lambda m, x: {"int": rf.cast(x * 3.0, "int32"), "float": rf.cast(rf.cast(x, "int32"), "float32")}),
    Case(("clip_by_value",), lambda m, x: rf.clip_by_value(x, -0.5, 0.5)),
    Case(("combine",), lambda m, x, y: {k: rf.combine(x, k, y) for k in ["add", "sub", "mul"]} | {
        "truediv": rf.combine(x, "truediv", _pos(y)), "scalar": rf.combine(x, "mul", 2.5)}, XY),
    Case(("combine:float",), lambda m, x, y: {k: rf.combine(x, k, y) for k in ["floordiv", "mod", "maximum", "minimum"]}
         | {"pow": rf.combine(_pos(x), "pow", y)}, XY),
    Case(("combine:int",), lambda m, i, j: {k: rf.combine(i, k, _nonzero(j)) for k in ["add", "sub", "mul", "floordiv",
                                                                                      "mod", "truediv"]},
         {"i": Input([B, T], "int32", sparse_dim=C), "j": Input([B, T], "int32", sparse_dim=C)}),
    Case(("combine:bool",), lambda m, x, y: {k: rf.combine(x > 0.0, k, y > 0.0) for k in ["logical_and", "logical_or"]},
         XY),
    Case(("round:halves",), lambda m, x: rf.round(rf.floor(x * 4.0) / 2.0)),
    Case(("reduce:int",), lambda m, i: {mode: rf.reduce(i, mode=mode, axis=T) for mode in ["sum", "max", "min"]}
         | {"cumsum": rf.cumsum(i, axis=T)}, {"i": Input([B, T], "int32", sparse_dim=C)}),
    Case(("reduce:batch",), lambda m, x: {mode: rf.reduce(x, mode=mode, axis=B) for mode in ["sum", "mean", "max"]}),
    Case(("compare",), lambda m, x, y: {k: rf.compare(x, k, y) for k in ["less", "greater_equal", "equal"]}, XY),
    Case(("maximum",), lambda m, x, y: rf.maximum(x, y), XY),
    Case(("minimum",), lambda m, x, y: rf.minimum(x, y), XY),
    Case(("where",), lambda m, x, y: rf.where(rf.compare(x, "greater", 0.0), x, y * 2.0), XY),
    Case(("scaled_gradient",), lambda m, x: rf.scaled_gradient(x, -0.5)),
    Case(("synthetic_gradient",), lambda m, x, y: rf.synthetic_gradient(x, y * 0.5, meta_loss_scale=2.0), XY),
    Case(("filtered_gradient",), lambda m, x: rf.filtered_gradient(x, 4.0, per=[B])),
    # --- reductions and softmax (over the dynamic dim: masked) --------------------------------------------
    Case(("reduce",), lambda m, x: {mode: rf.reduce(x, mode=mode, axis=T) for mode in ["sum", "mean", "max", "min"]}),
    Case(("reduce:empty",), lambda m, x: {mode: rf.reduce(x, mode=mode, axis=T0) for mode in ["sum", "mean", "max"]},
         {"x": Input([B, T0, F])}),
    Case(("softmax:empty",), lambda m, x: rf.softmax(x, axis=T0), {"x": Input([B, T0, F])}),
    Case(("reduce_sum",), lambda m, x: rf.reduce_sum(x, axis=[T, F])),
    Case(("reduce_mean",), lambda m, x: rf.reduce_mean(x, axis=T)),
    Case(("reduce_max",), lambda m, x: rf.reduce_max(x, axis=T)),
    Case(("reduce_min",), lambda m, x: rf.reduce_min(x, axis=T)),
    Case(("reduce_argmax",), lambda m, x: rf.reduce_argmax(x, axis=T)),
    Case(("moments",), lambda m, x: rf.moments(x, axis=T)),
    Case(("softmax",), lambda m, x: {"time": rf.softmax(x, axis=T), "feat": rf.softmax(x, axis=F)}),
    Case(("log_softmax",), lambda m, x: rf.log_softmax(x, axis=T)),
    Case(("matmul",), lambda m, x, y: {"time": rf.matmul(x, y, reduce=T), "feat": rf.matmul(x, y, reduce=F)}, XY),
    # a bias over the weight's own dim: one addmm on torch (matmul_add_raw), matmul + BiasAdd on TF
    Case(("matmul:bias",), lambda m, x: rf.matmul(x, m.w, reduce=F, bias=m.b), build=lambda: Params(w=[F, H], b=[H])),
    Case(("cumsum",), lambda m, x: {"fwd": rf.cumsum(x, axis=T), "rev": rf.cumsum(x, axis=T, reverse=True)}),
    # --- shape and array ops ----------------------------------------------------------------------------------
    Case(("concat",), lambda m, x, y: rf.concat((x, F), (y, F), out_dim=Dim(8, name="feat2")), XY),
    Case(("convert_to_tensor",), lambda m, x: x * rf.convert_to_tensor(np.arange(4, dtype="float32"), dims=[F])),
    Case(("dim_size_tensor",), lambda m, x: rf.dim_size_tensor(T)),
    Case(("frames_in",), lambda m, x: {"all": rf.frames_in(x, [B, T, F]), "int": rf.frames_in(x, [T], "int32")}),
    Case(("expand_dim",), lambda m, x: rf.expand_dim(x, Dim(1, name="one"))),
    Case(("squeeze",), lambda m, x: rf.squeeze(rf.expand_dim(x, ONE), ONE)),
    Case(("full",), lambda m, x: x + rf.full([F], 2.5)),
    Case(("ones",), lambda m, x: x * rf.ones([F]) + rf.ones([C])),
    Case(("zeros",), lambda m, x: x + rf.zeros([C])),
    Case(("zeros_like",), lambda m, x: x + rf.zeros_like(x)),
    Case(("gather",), lambda m, x, i: rf.gather(x, indices=i, axis=F), {**X, "i": Input([B], "int32", sparse_dim=F)}),
    Case(("take_frames",), lambda m, x, i: rf.take_frames(x, indices=i, axis=T, clip_to_valid=True),
         {**X, "i": Input([B, C], "int32", sparse_dim=C)}),
    Case(("masked",), lambda m, x: rf.masked(x, [T], -7.0)),
    Case(("sequence_mask",), lambda m, x: rf.sequence_mask([T], like=x)),
    Case(("merge_dims",), lambda m, x: rf.merge_dims(x, dims=[F, T])),
    Case(("merge_dims:time-first",), lambda m, x: rf.merge_dims(x, dims=[T, F])),
    Case(("softmax:log",), lambda m, x: rf.softmax(x, axis=T, log=True)),
    Case(("reduce_argmax:feat",), lambda m, x: rf.reduce_argmax(x, axis=F)),
    Case(("merge_dims:batch-time",), lambda m, x: rf.merge_dims(x, dims=[B, T])),
    Case(("pack_padded:time-batch",), lambda m, x: rf.pack_padded(x, dims=[T, B])),
    Case(("reverse_sequence:empty",), lambda m, x: rf.reverse_sequence(x, axis=T0), {"x": Input([B, T0, F])}),
    Case(("cumsum:empty",), lambda m, x: rf.cumsum(x, axis=T0, reverse=True), {"x": Input([B, T0, F])}),
    Case(("split_dims:time",), lambda m, x: rf.split_dims(x, axis=T, dims=[Dim(None, name="chunks"), Dim(2, name="pair")],
                                                         pad_to_multiples=True, pad_value=0.5),
         xfail="rf.split_dims of a dynamic dim into a new dynamic dim sets no sizes for it (a frontend bug in "
               "array.split_dims: 'no sizes are known for the dynamic dim chunks'), on both backends"),
    Case(("merge_dims_packed",), lambda m, x: rf.merge_dims_packed(x, dims=[T, F])),
    Case(("pack_padded",), lambda m, x: rf.pack_padded(x, dims=[B, T])),
    Case(("unpack_padded",), lambda m, x: _unpacked(*rf.pack_padded(x, dims=[B, T]))),
    Case(("merge_padded", "split_padded"), lambda m, x: rf.split_padded(
        rf.merge_padded(x, dims=[B, T], out_dim=padded_dim([B, T])), in_dim=padded_dim([B, T]), dims=[B, T])),
    Case(("sizes_along_padded",), lambda m, x: rf.split_padded(rf.sizes_along_padded(
        rf.get_run_ctx().size(S), merged=rf.merge_padded(x, dims=[B, T], out_dim=padded_dim([B, T])),
        in_dims=[B, T], like=x), in_dim=padded_dim([B, T]), dims=[B, T]), {"x": Input([B, T, S])}),
    Case(("permute",), lambda m, x: rf.permute(x, [F, T, B])),
    Case(("range_over_dim",), lambda m, x: {"t": rf.range_over_dim(T) + rf.zeros([B], dtype="int32"), "f": x * rf.range_over_dim(F, dtype="float32")}),
    Case(("replace_dim",), lambda m, x: rf.replace_dim(x, in_dim=F, out_dim=Dim(4, name="feat-renamed"))),
    Case(("reverse_sequence",), lambda m, x: rf.reverse_sequence(x, axis=T)),
    Case(("slice",), lambda m, x: rf.slice(x, axis=F, start=1, end=3, out_dim=Dim(2, name="mid"))),
    Case(("split",), lambda m, x: rf.split(x, axis=F, out_dims=[Dim(1, name="a"), Dim(3, name="b")])),
    Case(("split_dims",), lambda m, x: rf.split_dims(x, axis=F, dims=[Dim(2, name="hi"), Dim(2, name="lo")])),
    Case(("stack",), lambda m, x, y: rf.stack([x, y], out_dim=Dim(2, name="pair")), XY),
    Case(("one_hot",), lambda m, labels: rf.one_hot(labels), LABELS),
    Case(("window",), lambda m, x: rf.window(x, axis=F, window_dim=Dim(2, name="win"), out_dim=Dim(3, name="wins"))),
    Case(("pad:modes",), lambda m, x: {mode: rf.pad(x, axes=[F], padding=[(2, 1)], out_dims=[Dim(7, name="padded")],
                                               mode=mode) for mode in ["reflect", "symmetric", "replicate"]}),
    Case(("pad",), lambda m, x: rf.pad(x, axes=[F], padding=[(1, 2)], out_dims=[Dim(7, name="padded")], value=0.5)),
    # --- losses -------------------------------------------------------------------------------------------
    Case(("cross_entropy",), lambda m, logits, labels: rf.cross_entropy(
        estimated=logits, target=labels, axis=C, estimated_type="logits"), LOGITS),
    Case(("softmax_cross_entropy_with_logits",), lambda m, logits, labels: rf.softmax_cross_entropy_with_logits(
        logits=logits, targets=labels, axis=C), LOGITS),
    Case(("binary_cross_entropy",), lambda m, x, y: rf.binary_cross_entropy(
        from_logits=x, targets=rf.cast(rf.compare(y, "greater", 0.0), "float32")), XY),
    Case(("label_smoothing",), lambda m, logits, labels: rf.label_smoothing(rf.softmax(logits, axis=C), 0.1, axis=C),
         LOGITS),
    Case(("ctc_loss",), lambda m, logits, targets: rf.ctc_loss(
        logits=logits, targets=targets, input_spatial_dim=T, targets_spatial_dim=S, blank_index=4),
         {"logits": Input([B, T, C]), "targets": Input([B, S], "int32", sparse_dim=Dim(4, name="labels-cls"))}),
    Case(("ctc_loss:empty-targets",), lambda m, logits, targets: rf.ctc_loss(
        logits=logits, targets=targets, input_spatial_dim=T, targets_spatial_dim=S0, blank_index=4),
         {"logits": Input([B, T, C]), "targets": Input([B, S0], "int32", sparse_dim=Dim(4, name="labels-cls"))}),
    Case(("ctc_decode",), lambda m, logits, labels: rf.ctc_decode(logits, spatial_dim=T, classes_dim=C), LOGITS),
    Case(("ctc_decode:beam",), lambda m, logits, labels: rf.ctc_decode(logits, spatial_dim=T, classes_dim=C,
                                                                        beam_width=3), LOGITS),
    Case(("cross_entropy:probs",), lambda m, logits, labels: {
        kind: rf.cross_entropy(estimated=est, target=labels, axis=C, estimated_type=kind) for kind, est in [
            ("probs", rf.softmax(logits, axis=C)), ("log-probs", rf.log_softmax(logits, axis=C))]}, LOGITS),
    Case(("binary_cross_entropy:pos_weight",), lambda m, x, y: rf.binary_cross_entropy(
        from_logits=x, targets=rf.sigmoid(y), pos_weight=2.5), XY),
    Case(("collapse_repeated:empty",), lambda m, labels: rf.collapse_repeated(labels, spatial_dim=T0),
         {"labels": Input([B, T0], "int32", sparse_dim=C)}),
    Case(("ctc_decode:empty",), lambda m, logits: rf.ctc_decode(logits, spatial_dim=T0, classes_dim=C),
         {"logits": Input([B, T0, C])}),
    Case(("edit_distance:empty",), lambda m, a, b: rf.edit_distance(a, T0, b, S0),
         {"a": Input([B, T0], "int32", sparse_dim=C), "b": Input([B, S0], "int32", sparse_dim=C)}),
    Case(("collapse_repeated",), lambda m, labels: rf.collapse_repeated(labels, spatial_dim=T), LABELS),
    Case(("edit_distance",), lambda m, labels, other: rf.edit_distance(labels, T, other, S),
         {**LABELS, "other": Input([B, S], "int32", sparse_dim=C)}),
    # --- normalization, attention, gating ---------------------------------------------------------------------
    Case(("layer_norm",), lambda m, x: rf.layer_norm(x, in_dim=F, scale=m.scale, bias=m.bias, eps=1e-6),
         build=lambda: Params(scale=[F], bias=[F])),
    # over a dynamic last dim: the statistics of the valid frames only (no fused kernel, which would count padding)
    Case(("layer_norm:dynamic last dim",), lambda m, x: rf.layer_norm(
        x, in_dim=T, scale=rf.reduce_mean(_soft(x), axis=[B, F]), bias=None, eps=1e-6), {"x": Input([B, F, T])},
        layer_dict="not run: the case is about the torch kernel's choice"),
    Case(("rms_norm",), lambda m, x: rf.rms_norm(x, in_dim=F, scale=m.scale, bias=None, eps=1e-6),
         build=lambda: Params(scale=[F])),
    Case(("normalize",), lambda m, x: rf.normalize(x, axis=F)),
    Case(("dot_attention",), lambda m, x, y: rf.dot_attention(x, y, y * 2.0, key_dim=F, axis=T), XY),
    Case(("gating",), lambda m, x: rf.gating(x, axis=F)),
    # --- convolution and pooling (over the dynamic dim) -------------------------------------------------
    Case(("conv",), lambda m, x: rf.conv(x, in_dim=F, out_dim=H, in_spatial_dims=[T], filter=m.filter,
                                         filter_size=[WIN3], padding="same"),
         build=lambda: Params(filter=[H, F, WIN3])),
    Case(("transposed_conv",), lambda m, x: rf.transposed_conv(x, in_dim=F, out_dim=H, in_spatial_dims=[T],
                                                               filter=m.filter, filter_size=[WIN3], padding="valid",
                                                               strides=2),
         build=lambda: Params(filter=[H, F, WIN3])),
    Case(("conv:strided",), lambda m, x: rf.conv(x, in_dim=F, out_dim=H, in_spatial_dims=[T], filter=m.filter,
                                                 filter_size=[WIN3], padding="valid", strides=2, dilation_rate=1),
         build=lambda: Params(filter=[H, F, WIN3])),
    Case(("conv:strided-dilated",), lambda m, x: rf.conv(x, in_dim=F, out_dim=H, in_spatial_dims=[T], filter=m.filter,
                                                         filter_size=[WIN3], padding="valid", strides=2,
                                                         dilation_rate=2),
         build=lambda: Params(filter=[H, F, WIN3])),
    Case(("transposed_conv:same",), lambda m, x: rf.transposed_conv(
        x, in_dim=F, out_dim=H, in_spatial_dims=[T], filter=m.filter, filter_size=[WIN3], padding="same", strides=3),
         build=lambda: Params(filter=[H, F, WIN3])),
    Case(("pool",), lambda m, x: rf.pool(x, mode="avg", pool_size=[2], padding="same", in_spatial_dims=[T])),
    Case(("pool1d",), lambda m, x: rf.pool1d(x, mode="max", pool_size=3, padding="same", strides=2, in_spatial_dim=T)),
    Case(("pool1d:strided-dilated",), lambda m, x: {mode: rf.pool1d(x, mode=mode, pool_size=2, padding="same", strides=2,
                                                                   dilation_rate=2, in_spatial_dim=T)
                                                    for mode in ["max", "avg"]}),
    Case(("gather:time-clipped",), lambda m, x, i: rf.gather(x, indices=i, axis=T, clip_to_valid=True),
         {**X, "i": Input([B, C], "int32", sparse_dim=Dim(7, name="far"))}),
    Case(("pool2d",), lambda m, x: rf.pool2d(x, mode="avg", pool_size=(2, 2), padding="valid",
                                             in_spatial_dims=[T, F]), {"x": Input([B, T, F, H])}),
    Case(("pool3d",), lambda m, x: rf.pool3d(x, mode="max", pool_size=(2, 2, 1), padding="valid",
                                             in_spatial_dims=[T, F, C]), {"x": Input([B, T, F, C, H])}),
    Case(("max_pool",), lambda m, x: rf.max_pool(x, pool_size=2, padding="same", in_spatial_dims=[T])),
    Case(("max_pool1d",), lambda m, x: rf.max_pool1d(x, pool_size=2, strides=1, in_spatial_dim=T)),
    # --- recurrences ----------------------------------------------------------------------------------------
    Case(("lstm",), lambda m, x: rf.lstm(x, state_h=rf.zeros([H]), state_c=rf.zeros([H]), ff_weight=m.ff,
                                         rec_weight=m.rec, bias=m.bias, spatial_dim=T, in_dim=F, out_dim=H),
         build=lambda: Params(ff=[F, G4], rec=[H, G4], bias=[G4])),
    Case(("lstm:empty",), lambda m, x: rf.lstm(x, state_h=rf.ones([H]), state_c=rf.ones([H]), ff_weight=m.ff,
                                               rec_weight=m.rec, bias=m.bias, spatial_dim=T0, in_dim=F, out_dim=H,
                                               forget_bias=1.0),
         {"x": Input([B, T0, F])}, build=lambda: Params(ff=[F, G4], rec=[H, G4], bias=[G4])),
    Case(("lstm:sparse",), lambda m, labels: rf.lstm(labels, state_h=rf.zeros([H]), state_c=rf.zeros([H]),
                                                     ff_weight=m.ff, rec_weight=m.rec, bias=m.bias, spatial_dim=T,
                                                     in_dim=C, out_dim=H),
         LABELS, build=lambda: Params(ff=[C, G4], rec=[H, G4], bias=[G4])),
    Case(("zoneout_lstm",), lambda m, x: rf.zoneout_lstm(
        x, state_h=rf.zeros([H]), state_c=rf.zeros([H]), ff_weight=m.ff, rec_weight=m.rec, bias=m.bias,
        spatial_dim=T, in_dim=F, out_dim=H, zoneout_cell=0.2, zoneout_output=0.1),
         build=lambda: Params(ff=[F, G4], rec=[H, G4], bias=[G4])),
    Case(("gru",), lambda m, x: rf.gru(x, state=rf.zeros([H]), ff_weight=m.ff, rec_weight=m.rec, bias=m.bias,
                                       spatial_dim=T, in_dim=F, out_dim=H),
         build=lambda: Params(ff=[F, G3], rec=[H, G3], bias=[G3])),
    Case(("rnn",), lambda m, x: rf.rnn(x, state=rf.zeros([H]), ff_weight=m.ff, rec_weight=m.rec, bias=m.bias,
                                       spatial_dim=T, in_dim=F, out_dim=H),
         build=lambda: Params(ff=[F, H1], rec=[H, H1], bias=[H1])),
    Case(("rhn",), lambda m, x: rf.rhn(x, state=rf.zeros([H]), ff_weight=m.ff, bias=m.bias,
                                       depth_weights=[m.d0, m.d1], spatial_dim=T, in_dim=F, out_dim=H),
         build=lambda: Params(ff=[F, G2], bias=[G2], d0=[H, G2], d1=[H, G2])),
    Case(("lstm_step",), lambda m, x, h, c: rf.lstm_step(x, state_h=h, state_c=c, ff_weight=m.ff, rec_weight=m.rec,
                                                         bias=m.bias, in_dim=F, out_dim=H),
         {"x": Input([B, F]), "h": Input([B, H]), "c": Input([B, H])},
         build=lambda: Params(ff=[F, G4], rec=[H, G4], bias=[G4])),
    Case(("zoneout_lstm_step",), lambda m, x, h, c: rf.zoneout_lstm_step(
        x, state_h=h, state_c=c, ff_weight=m.ff, rec_weight=m.rec, bias=m.bias, in_dim=F, out_dim=H,
        zoneout_cell=0.2, zoneout_output=0.1),
         {"x": Input([B, F]), "h": Input([B, H]), "c": Input([B, H])},
         build=lambda: Params(ff=[F, G4], rec=[H, G4], bias=[G4])),
    Case(("gru_step",), lambda m, x, h: rf.gru_step(x, state=h, ff_weight=m.ff, rec_weight=m.rec, bias=m.bias,
                                                    in_dim=F, out_dim=H),
         {"x": Input([B, F]), "h": Input([B, H])}, build=lambda: Params(ff=[F, G3], rec=[H, G3], bias=[G3])),
    Case(("rnn_step",), lambda m, x, h: rf.rnn_step(x, state=h, ff_weight=m.ff, rec_weight=m.rec, bias=m.bias,
                                                    in_dim=F, out_dim=H),
         {"x": Input([B, F]), "h": Input([B, H])}, build=lambda: Params(ff=[F, H1], rec=[H, H1], bias=[H1])),
    Case(("rhn_step",), lambda m, x, h: rf.rhn_step(x, state=h, ff_weight=m.ff, bias=m.bias, depth_weights=[m.d0],
                                                    in_dim=F, out_dim=H),
         {"x": Input([B, F]), "h": Input([B, H])}, build=lambda: Params(ff=[F, G2], bias=[G2], d0=[H, G2])),
    # --- control flow ----------------------------------------------------------------------------------------
    Case(("scan",), lambda m, x: rf.scan(lambda s, f: s * 0.5 + f, xs=x, spatial_dim=T, initial=rf.zeros([B, F]))),
    Case(("while_loop",), lambda m, x: rf.while_loop(
        lambda s: rf.reduce_max(rf.abs(s["v"]), axis=[B, F]) < 50.0,
        lambda s: {"v": s["v"] * 2.0, "n": s["n"] + 1}, {"v": x, "n": rf.convert_to_tensor(0, dtype="int32")}),
         {"x": Input([B, F])}, layer_dict="refused: rf.while_loop is not supported on the layer-dict backend"),
    Case(("cond",), lambda m, x: rf.cond(rf.reduce_sum(x, axis=[B, F]) > 0.0, lambda: x * 2.0, lambda: -x),
         {"x": Input([B, F])}, layer_dict=f"refused: rf.cond {REFUSED}"),
    Case(("map_tensors",), lambda m, x, y: rf.map_tensors(rf.tanh, {"a": x, "b": [y]}), XY,
         layer_dict=f"refused: rf.map_tensors {REFUSED}"),
    Case(("assert_equal", "with_dependencies"), lambda m, x: rf.with_dependencies(
        x * 2.0, [rf.assert_equal(x, rf.identity(x), message="x differs from itself")]),
         layer_dict=f"refused: rf.assert_equal {REFUSED}"),
    # --- randomness (different numbers per backend: dims, dtypes, ranges) ---------------------------------
    Case(("dropout",), lambda m, x: rf.dropout(x, 0.3, axis=[F]), training=True, values=False),
    Case(("random_uniform",), lambda m, x: x + rf.random_uniform([F], minval=-1.0, maxval=1.0), values=False),
    Case(("random_normal",), lambda m, x: x + rf.random_normal([F], stddev=0.1), values=False),
    Case(("random",), lambda m, x: x + rf.random([F], distribution="uniform"), values=False),
    Case(("parameter_assign",), lambda m, x: _assign_and_read(m, x), {"x": Input([B, F])},
         build=lambda: Params(p=[F]), layer_dict="refused: rf.parameter_assign is not supported on the layer-dict"),
    # --- modules --------------------------------------------------------------------------------------------
    module("Linear", lambda: rf.Linear(F, H)),
    module("Embedding", lambda: rf.Embedding(C, H), lambda m, labels: m(labels), LABELS),
    module("Conv1d", lambda: rf.Conv1d(F, H, 3, padding="same"), lambda m, x: m(x, in_spatial_dim=T)),
    module("Conv1d:grouped-dilated-strided", lambda: rf.Conv1d(F, Dim(6, name="out6"), 2, padding="same", groups=2,
                                                             dilation_rate=2, strides=2),
           lambda m, x: m(x, in_spatial_dim=T)),
    module("Conv2d", lambda: rf.Conv2d(F, H, (3, 2), padding="valid"), lambda m, x: m(x, in_spatial_dims=[T, C]),
           {"x": Input([B, T, C, F])}),
    module("Conv3d", lambda: rf.Conv3d(F, H, (2, 2, 2), padding="same"),
           lambda m, x: m(x, in_spatial_dims=[C, ONE, DEPTH]),
           {"x": Input([B, C, ONE, DEPTH, F])}),
    module("TransposedConv1d", lambda: rf.TransposedConv1d(F, H, 3, padding="same", strides=2),
           lambda m, x: m(x, in_spatial_dim=T)),
    module("TransposedConv2d", lambda: rf.TransposedConv2d(F, H, (2, 2), padding="valid"),
           lambda m, x: m(x, in_spatial_dims=[T, C]), {"x": Input([B, T, C, F])}),
    module("LayerNorm", lambda: rf.LayerNorm(F)),
    module("RMSNorm", lambda: rf.RMSNorm(F)),
    module("GroupNorm", lambda: rf.GroupNorm(F, num_groups=2)),
    module("Normalize", lambda: rf.Normalize(param_dims=[F]), lambda m, x: m(x, axis=F)),
    module("BatchNorm", lambda: rf.BatchNorm(F), layer_dict="refused: rf.parameter_assign is not supported"),
    Case(("BatchNorm:eval",), lambda m, x: m(x), build=lambda: rf.BatchNorm(F),
         layer_dict="refused: rf.parameter_assign is not supported (the probe runs in training too)"),
    module("Dropout", lambda: rf.Dropout(0.2)),
    module("LSTM", lambda: rf.LSTM(F, H), lambda m, x: m(x, state=m.default_initial_state(batch_dims=[B]),
                                                        spatial_dim=T)),
    module("SelfAttention", lambda: rf.SelfAttention(F, H, key_dim_total=F, value_dim_total=F, num_heads=2),
           lambda m, x: m(x, axis=T)),
    module("Sequential", lambda: rf.Sequential(rf.Linear(F, H), rf.Functional(rf.relu), rf.Linear(H, C))),
    Case(("Functional",), lambda m, x: m(x), build=lambda: rf.Functional(rf.tanh)),
    module("ModuleList", lambda: rf.ModuleList(rf.Linear(F, F), rf.Linear(F, F)),
           lambda m, x: rf.tanh(m[1](rf.tanh(m[0](x))))),
    module("sequential", lambda: rf.ModuleList(rf.Linear(F, H), rf.Linear(H, C)),
           lambda m, x: rf.sequential(x, *m)),
    module("Parameter", lambda: Params(w=[F]), lambda m, x: x * m.w),
    module("ParameterList", lambda: _param_list(), lambda m, x: x * m[0] + m[1]),
    module("Module", lambda: _Custom(), lambda m, x: m(x)),
]



def _assign_and_read(model, x):
    rf.parameter_assign(model.p, rf.reduce_mean(x, axis=B))
    return x * model.p


def _param_list():
    params = [rf.Parameter([F]), rf.Parameter([F])]
    for p in params:
        p.initial = rf.init.Glorot()
    return rf.ParameterList(*params)


class _Custom(rf.Module):
    """A user's module: a Linear and a Parameter of its own, a residual sum."""

    def __init__(self):
        super().__init__()
        self.proj = rf.Linear(F, F)
        self.gain = rf.Parameter([F])
        self.gain.initial = rf.init.Glorot()

    def __call__(self, x):
        return x + rf.relu(self.proj(x)) * self.gain


EXCLUDED = {
    # run context, backend and randomness settings: the harness itself runs every case through them
    "current_run_ctx": "the run context (no computation); every case runs inside one",
    "get_run_ctx": "the run context (no computation); every case runs inside one",
    "RunContext": "the run context (no computation); every case runs inside one",
    "SizeTable": "the run context's table of dynamic sizes; every case's ragged lengths go through it",
    "MarkedLoss": "a record of a marked loss (no computation); marked losses are compared in the layer-dict route",
    "select_backend": "backend selection: the harness selects TF, then torch, for every case",
    "select_backend_tf": "backend selection (see select_backend)",
    "select_backend_torch": "backend selection (see select_backend)",
    "selected_backend": "backend selection (see select_backend)",
    "set_random_seed": "seeding: the harness seeds every case (the equal initial parameters show it works)",
    "get_random_seed": "seeding (see set_random_seed)",
    "dropout_broadcast_default": "a configuration flag (behavior_version), no computation",
    "create_parameter": "the backend-level constructor rf.Parameter runs through: covered by every module case",
    # the tensor types themselves
    "Tensor": "the value type every case computes with",
    "Data": "the template type of every Tensor",
    "Dim": "the dim type every case addresses its ops by",
    "State": "a container of loop/recurrent states (no computation); filled by the LSTM case",
    "LstmState": "the container rf.LSTM's states come in (no computation); covered by the LSTM case",
    "UserCodeResultError": "an exception type",
    "masked_dims": "returns the list of Dims a reduction masks (no Tensor); covered by the reduce cases",
    "shape_of": "returns the raw sizes of dims (backend scalars, no Tensor); covered by the ops that read sizes",
    # the bridge to framework code in configs: raw values, no Tensor op to compare
    "UserData": "the Data-like view config code gets of a raw framework value (see raw_for_user_code)",
    "user_data": "makes a UserData for config code (see raw_for_user_code)",
    "host_callback": "hands values to Python on the host (print, hdf_dump): a side effect, tested in "
                     "tests/test_side_effect_layers.py on both backends",
    "raw_for_user_code": "hands a raw framework value to config code (different types per backend by design)",
    "tensor_from_user_code": "wraps a raw framework value from config code (see raw_for_user_code)",
    "user_code_globals": "the names config code sees (no computation)",
    # beam search and loop-body internals: need a beam run context / the loop-body builder; their own tests
    "beam_step": "beam search internals, need a run context with a beam (tests/test_search.py)",
    "best_rows": "beam search internals (see beam_step)",
    "backtrack": "beam search internals (see beam_step)",
    "gather_batch": "beam search internals (see beam_step)",
    "initial_scores": "beam search internals (see beam_step)",
    "sort_beams": "beam search internals (see beam_step)",
    "tile_batch": "beam search internals (see beam_step)",
    "step_frame": "loop-body internals of rec units (tests/test_loop_step_emission.py); rf.scan is the public loop",
    "step_frames": "loop-body internals (see step_frame)",
    "step_stack": "loop-body internals (see step_frame)",
    "step_stack_stack": "loop-body internals (see step_frame)",
    "step_stack_write": "loop-body internals (see step_frame)",
}


def _public_callables():
    names = set()
    for name in dir(rf):
        obj = getattr(rf, name)
        if name.startswith("_") or inspect.ismodule(obj) or not callable(obj):
            continue
        names.add(name)
    return names


def test_every_public_op_and_module_has_a_case():
    covered = {op.split(":")[0] for case in CASES for op in case.ops}
    missing = _public_callables() - covered - set(EXCLUDED)
    assert not missing, f"frontend callables with no differential case and no reasoned exclusion: {sorted(missing)}"
    stale = (covered | set(EXCLUDED)) - _public_callables()
    assert not stale, f"cases or exclusions of names rf does not have: {sorted(stale)}"
    assert not covered & set(EXCLUDED), "a name is both covered and excluded"


def _params(case: Case):
    return pytest.param(case, id=case.id, marks=[pytest.mark.xfail(strict=True, reason=case.xfail)]
                        if case.xfail else [])


@pytest.mark.parametrize("case", [_params(case) for case in CASES])
def test_tf_and_torch_agree(case: Case):
    batch = ragged_batch(case.inputs, {d: v for d, v in LENGTHS.items()
                                       if any(d in i.dims for i in case.inputs.values())} or {T: LENGTHS[T]})
    if case.values:
        tf_result, torch_result = run_both(case.build, _call(case), batch, training=case.training)
        assert tf_result.outputs, "the case computed nothing"
        return
    results = [run(b, case.build, _call(case), batch, training=case.training)
               for b in (["tensorflow", "torch"] if HAVE_TORCH else ["tensorflow"])]
    for name, value in results[0].outputs.items():
        for other in results[1:]:
            assert other.outputs[name].shape == value.shape and other.outputs[name].dtype == value.dtype
            assert other.dims[name] == results[0].dims[name]
            assert np.isfinite(other.outputs[name][other.valid[name]]).all()


# --- through the layer dict -------------------------------------------------------------------------------------
def _dict_params():
    marks = []
    for case in CASES:
        reason = case.layer_dict or ""
        if reason.startswith("not run") or not case.values:
            continue
        if any(len([d for d in i.dims if d.size is None and not d.is_batch]) > 1 for i in case.inputs.values()):
            continue  # one sequence length per extern_data key
        marks.append(_params(case))
    return marks


class _DictModel(rf.Module):
    """A case's model (`inner`) and a trainable shift per float input (`shift_<key>`, over the input's static
    dims: the gradients of the layer dict reach the inputs through it)."""

    def __init__(self, case: Case):
        super().__init__()
        inner = case.build()
        if inner is not None:
            self.inner = inner
        for key, spec in case.inputs.items():
            if spec.dtype.startswith("float"):
                setattr(self, f"shift_{key}", rf.Parameter([d for d in spec.dims if d.size is not None], initial=0.1))


def _dict_config(case: Case):
    from netcompiler.config import Config

    def train_step(*, model, extern_data, **_kwargs):
        tensors = {k: extern_data[k] + getattr(model, f"shift_{k}") if spec.dtype.startswith("float")
                   else extern_data[k] for k, spec in case.inputs.items()}
        for name, out in _tensors(case.call(getattr(model, "inner", None), **tensors)).items():
            if out.dtype.startswith("float"):
                (out * rf.sin(out)).mark_as_loss(name=name)
            else:
                rf.cast(out, "float32").mark_as_loss(name=name, as_error=True)

    extern_data = {k: {"dims": tuple(i.dims), "dtype": i.dtype, **({"sparse_dim": i.sparse_dim} if i.sparse_dim
                                                                     else {})} for k, i in case.inputs.items()}
    return Config({"extern_data": extern_data, "get_model": lambda **_kwargs: _DictModel(case),
                   "train_step": train_step})


@pytest.mark.parametrize("case", _dict_params())
def test_the_layer_dict_gives_the_direct_tf_losses_and_gradients(case: Case):
    pytest.importorskip("tensorflow")
    from netcompiler.backends.layers import LayerDictUnsupported
    from netcompiler.engine.frontend_layers import LayerDictModel
    from test_backend_layers import _losses_and_grads

    rf.select_backend("tensorflow")
    if case.layer_dict:
        expected = case.layer_dict.split(": ", 1)[1].split(" (")[0]  # the message, without our note on why
        with pytest.raises(LayerDictUnsupported, match=re.escape(expected)):
            LayerDictModel(_dict_config(case), seed=3)
        return
    model = LayerDictModel(_dict_config(case), seed=3)
    recorded = {op.op_name for op in model.layer_dict.ops.values()}
    from netcompiler.frontend._dispatch import _NOT_OPS

    op = getattr(rf, case.op)
    op = getattr(op, "__recorded_op__", op)
    if inspect.isfunction(op) and op.__module__.rsplit(".", 1)[1] not in _NOT_OPS and case.id != "identity":
        # an op (not model building; rf.identity returns its input: no layer)
        assert op.__name__ in recorded, f"rf.{case.id} is no layer of the dict: {sorted(recorded)}"
    dims = {d: np.asarray(v, "int32") for d, v in LENGTHS.items()}
    batch = ragged_batch(case.inputs, {d: v for d, v in dims.items()
                                       if any(d in i.dims for i in case.inputs.values())} or {T: dims[T]})
    inputs = {k: i.value for k, i in batch.inputs.items()}
    lengths = {k: batch.lengths[d] for k, i in case.inputs.items() for d in i.dims if d in batch.lengths}
    names = sorted(set(model.layer_dict.params.values()))
    via_dict = _losses_and_grads(model, [model.params[n] for n in names], inputs, lengths)
    direct = _losses_and_grads(model.frontend, [model.frontend.params[n] for n in names], inputs, lengths)
    assert via_dict[0].keys() == direct[0].keys()
    for loss_name, sums in direct[0].items():
        for got, want in zip(via_dict[0][loss_name], sums):
            assert (got is None) == (want is None), loss_name
            if want is not None:
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=loss_name)
    for name, got, want in zip(names, via_dict[2], direct[2]):
        assert (got is None) == (want is None), name
        if want is not None:
            got, want = _dense(got), _dense(want)
            scale = max(1.0, float(np.abs(want).max()))
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * scale, err_msg=f"gradient of {name}")


def _dense(grad: np.ndarray) -> np.ndarray:
    """A gradient as a dense array (TF gives the rows of a gather as IndexedSlices: an object array here)."""
    if grad.dtype == object:
        import tensorflow as tf

        return tf.convert_to_tensor(grad.item()).numpy()
    return grad
