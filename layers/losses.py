"""Loss classes: what "loss": NAME on a layer computes against its target.

Each loss checks at template time that the layer's output and the target fit
it (`check_templates`), after its "loss_opts" values have been checked against
their declarations. At emission `compute` returns the loss and error summed over
valid frames (padding never counts) and the number of frames they are normalised
by; the trainer divides by that count per batch and over an epoch.

Common options (every loss): `scale` (multiplies the loss in the objective, like
the layer option `loss_scale`; giving both with different values is an error),
`use_normalized_loss` (False: training minimises the loss summed over the
batch's frames, as RETURNN does; True: per frame), `custom_norm_factor` (the
sum is multiplied by this number instead: `compute` reports 1 / factor as the
count, and the objective is normalised), `use_flatten_frames` (accepted; frames
are always flattened). Reported scores are always per frame.

The other losses are in `losses_ctc.py` (ctc), `losses_sequence.py` (edit_distance, bleu, search_score,
expected_loss) and `losses_other.py` (generic_ce, deep_clustering, triplet_loss, via_layer, sampling_loss,
sprint).
"""

import math
from typing import Optional

from netcompiler import frontend as rf
from netcompiler.layer_base import NONE_TYPE, NUMBER, Option
from netcompiler.loss_base import LossBase
from netcompiler.tensor import FLOAT_DTYPES, Data, Dim, batch_dim

LOG_EPS = 1e-20
"""Probabilities are clipped to at least this before their log (when no logits were recorded)."""


# loss_opts every loss accepts (RETURNN's Loss base class)
COMMON_LOSS_OPTIONS = {
    "use_flatten_frames": Option(True, (bool,)),
    "use_normalized_loss": Option(False, (bool,)),
    "custom_norm_factor": Option(None, NUMBER + (NONE_TYPE,)),
    "scale": Option(1.0, NUMBER),
}


class CheckedLoss(LossBase):
    """A loss whose "loss_opts" values are type-checked; options named in `unsupported` must keep their default.

    Subclasses implement `sums(ctx, output, target) -> (loss_sum, error_sum or None, num_frames)` (scalar
    Tensors, through the op layer); `compute` applies the common options. `error_name` says what the error is
    ("fer", "ler"; None: no error)."""

    unsupported = ()
    error_name: Optional[str] = None

    def check(self):
        for key, option in self.options.items():
            if key in self.unsupported and self.opts[key] != option.default:
                raise self.error(f"'loss_opts' key '{key}' is not supported by netcompiler yet")
        self.scale = self.combined_scale()
        norm = self.opts.get("custom_norm_factor")
        if norm is not None and norm <= 0:
            raise self.error(f"'loss_opts' key 'custom_norm_factor' must be positive, not {norm!r}")
        self.check_templates(self.layer.output, self.target_layer.output if self.target_layer else None)

    def combined_scale(self) -> float:
        """The layer's `loss_scale` and the loss option `scale` are the same thing (as in RETURNN)."""
        layer_scale, opt_scale = self.layer.opts.get("loss_scale", 1.0), self.opts.get("scale", 1.0)
        if layer_scale != 1.0 and opt_scale != 1.0 and layer_scale != opt_scale:
            raise self.error(f"'loss_scale' {layer_scale} and 'loss_opts' 'scale' {opt_scale} disagree",
                             suggestion="give only one of them")
        return layer_scale if layer_scale != 1.0 else opt_scale

    def compute(self, ctx, output, target):
        loss_sum, error_sum, frames = self.sums(ctx, output, target)
        norm = self.opts.get("custom_norm_factor")
        frames = rf.convert_to_tensor(1.0 / norm, dtype="float32") if norm is not None else rf.cast(frames, "float32")
        loss_sum = None if loss_sum is None else rf.cast(loss_sum, "float32")  # None: an error only
        return loss_sum, None if error_sum is None else rf.cast(error_sum, "float32"), frames

    def sums(self, ctx, output, target):  # pragma: no cover - each loss overrides
        raise NotImplementedError(f"loss '{self.loss_class}' has no emission yet")

    def check_templates(self, out: Data, target: Optional[Data]) -> None:
        """Raises a ConfigError if `out` and `target` do not fit this loss."""

    def target_error(self, out: Data, target: Data, problem: str, suggestion: Optional[str] = None):
        return self.error(f"target '{self.target_layer.name}' {target.describe()} does not fit the output "
                          f"{out.describe()}: {problem}", suggestion=suggestion)

    def check_float_output(self, out: Data) -> None:
        if out.sparse or out.dtype not in FLOAT_DTYPES:
            raise self.error(f"the output {out.describe()} {out.dtype} must hold float values")


def frame_axes(data: Data):
    """The dims other than batch and feature (time, ...), in order."""
    return [d for d in data.dims if not d.is_batch and d != data.feature_dim]


def frames_fit(out: Data, target: Data) -> bool:
    """Whether the axes other than batch and feature correspond in order: the same Dim, both dynamic (lengths
    are checked at run time), or static of the same size."""
    mine, theirs = frame_axes(out), frame_axes(target)
    return len(mine) == len(theirs) and all(
        a == b or (a.is_dynamic and b.is_dynamic) or a.size == b.size for a, b in zip(mine, theirs))


def frame_dims(data: Data):
    """The dims that index frames, batch first: all but the feature dim."""
    return [d for d in data.copy_with_batch_first().dims if d != data.feature_dim]


class FramewiseLoss(CheckedLoss):
    """A loss computed per valid frame, the output's frames paired positionally with the target's.

    Subclasses implement `frame_losses(out, target) -> (loss [N], error [N] or None)` on paired frames: both
    packed to the valid frames N (`rf.pack_padded`, batch-major), the target on the output's dims."""

    def sums(self, ctx, output, target):
        dims = frame_dims(self.layer.output)
        out, tgt = self.frame_input(ctx, output), self.paired_target(target)
        if rf.sequence_mask(dims, like=out) is None:  # no frame is padding (an eager run of full sequences)
            losses, errors = self.frame_losses(out, tgt)
            count = rf.frames_in(out, dims)
        else:
            out, frames = rf.pack_padded(out, dims=dims)
            tgt, _ = rf.pack_padded(tgt, dims=dims, out_dim=frames)
            losses, errors = self.frame_losses(out, tgt)
            dims, count = [frames], rf.dim_size_tensor(frames)
        error_sum = None if errors is None else rf.reduce_sum(rf.cast(errors, "float32"), axis=dims, use_mask=False)
        return rf.reduce_sum(losses, axis=dims, use_mask=False), error_sum, count

    def frame_input(self, ctx, output):
        """What is flattened on the output side (laid out as the output)."""
        return output

    def paired_target(self, target):
        """The target on the output's dims: its frame axes (in order) and its feature or class dim; available
        only after a run-time check that its lengths are the output's."""
        out, tgt = self.layer.output, self.target_layer.output
        checks = []
        for a, b in zip(frame_axes(out), frame_axes(tgt)):
            if a == b:
                continue
            if a.is_dynamic and b.is_dynamic:
                checks.append(rf.assert_equal(
                    rf.dim_size_tensor(a), rf.dim_size_tensor(b),
                    message=f"layer '{self.layer.name}': loss '{self.loss_class}': the lengths of the output's "
                            f"{a.short_repr()} differ from those of target '{self.target_layer.name}' "
                            f"{b.short_repr()}"))
            target = rf.replace_dim(target, in_dim=b, out_dim=a)
        if tgt.sparse:
            target = target.copy(sparse_dim=out.feature_dim)
        elif tgt.feature_dim is not None:
            target = rf.replace_dim(target, in_dim=tgt.feature_dim, out_dim=out.feature_dim)
        return rf.with_dependencies(target, checks)

    def frame_losses(self, out, tgt):  # pragma: no cover - each loss overrides
        raise NotImplementedError

    def dense_target(self, tgt, dtype):
        """Target frames as values: class indices become one-hot vectors over the output's feature dim."""
        return rf.one_hot(tgt, dtype=dtype) if tgt.sparse_dim is not None else rf.cast(tgt, dtype)

    def per_frame(self, x, mode):
        """`x` reduced with `mode` over the output's feature dim (frames without one stay as they are)."""
        feature = self.layer.output.feature_dim
        return x if feature is None else rf.reduce(x, mode=mode, axis=feature)


class CrossEntropyLoss(FramewiseLoss):
    """Cross entropy of the layer's output distribution against sparse class targets (or a dense target
    distribution), per valid frame; the error is the frame error rate (argmax of the output != target class).

    The log-probabilities come from the logits a softmax layer recorded (stable, and the backend's fused softmax
    cross entropy: `rf.softmax_cross_entropy_with_logits`), else from log(max(p, 1e-20)) of the output. Options
    (loss_opts): `label_smoothing` (0.0: the target class gets 1 - s, every other class s / (classes - 1); for a
    dense target t: (1 - s) t + s / (classes - 1) (1 - t); the loss is the plain cross entropy against that
    distribution, for sparse targets minus that distribution's entropy as in RETURNN, so that a perfect output
    has loss 0), `focal_loss_factor` (0.0; g > 0 multiplies each frame's loss by (1 - p_target)^g, p_target the
    output probability of the target, for a dense target the sum of p t; the gradient flows through that
    factor), `use_fused` (True; accepted: the fused kernels are always used), `label_smoothing_gaussian`,
    `debug_dump`, `safe_log_opts`, `fake_upper_bound` (not supported), and the common ones: `use_flatten_frames`
    (True), `use_normalized_loss` (False), `custom_norm_factor` (None), `scale` (1.0).
    """

    loss_class = "ce"
    error_name = "fer"
    reads_output = False  # with recorded logits, frame_input takes those (output_logits)
    options = {**COMMON_LOSS_OPTIONS,
               "label_smoothing": Option(0.0, NUMBER), "focal_loss_factor": Option(0.0, NUMBER),
               "use_fused": Option(True, (bool,)), "label_smoothing_gaussian": Option(False, (bool,)),
               "debug_dump": Option(False, (bool,)), "safe_log_opts": Option(None, (dict, NONE_TYPE)),
               "fake_upper_bound": Option(None, NUMBER + (NONE_TYPE,))}
    unsupported = ("label_smoothing_gaussian", "debug_dump", "safe_log_opts", "fake_upper_bound")

    def check_templates(self, out, target):
        if out.feature_dim is None:
            raise self.error(f"the output {out.describe()} has no feature dim with class scores")
        if target.sparse:
            if target.dim != out.dim:
                raise self.error(f"the output has {out.dim} classes but target '{self.target_layer.name}' has "
                                 f"{target.dim}", suggestion=f"set n_out={target.dim}")
        elif target.dim != out.dim:
            raise self.error(f"dense target {target.describe()} does not match the output {out.describe()}")
        if not frames_fit(out, target):
            raise self.target_error(out, target, "their axes (other than batch and feature) differ")
        smoothing = self.opts.get("label_smoothing", 0.0)  # (generic_ce, a subclass, has no such option)
        if not 0 <= smoothing < 1:
            raise self.error(f"'loss_opts' key 'label_smoothing' must be in [0, 1), not {smoothing!r}",
                             suggestion="e.g. 0.1 (the target class gets 0.9)")
        if smoothing and out.dim < 2:
            raise self.error(f"'loss_opts' key 'label_smoothing' spreads over the other classes, and the output has "
                             f"{out.dim}", suggestion="set label_smoothing 0 or give the output more classes")

    def frame_input(self, ctx, output):
        self.normalized = ctx.logits_of(self.layer) is None  # the output is taken as probabilities as it is
        return output_logits(ctx, self.layer, output, in_log_space=False)

    def frame_losses(self, logits, tgt):
        """Per frame; `logits` are those a softmax recorded, else log(max(p, 1e-20)) of the output p, which (as in
        RETURNN) is not normalised again: the loss is then -sum(target * log p)."""
        classes = self.layer.output.feature_dim
        smoothing, focal = float(self.opts["label_smoothing"]), float(self.opts["focal_loss_factor"])
        if tgt.sparse_dim is not None:
            losses, log_p_target = self.sparse_losses(logits, tgt, smoothing)
            p_target = rf.exp(log_p_target()) if focal else None
        else:
            dense = self.dense_target(tgt, logits.dtype)
            dist = (1.0 - smoothing) * dense + smoothing / (classes.size - 1) * (1.0 - dense) if smoothing else dense
            losses = (-rf.reduce_sum(dist * logits, axis=classes) if self.normalized
                      else rf.softmax_cross_entropy_with_logits(logits=logits, targets=dist, axis=classes))
            if focal:
                probs = rf.exp(logits) if self.normalized else rf.softmax(logits, axis=classes)
                p_target = rf.reduce_sum(dense * probs, axis=classes)
        if focal:
            losses = losses * (1.0 - p_target) ** focal
        return losses, argmax_errors(logits, tgt, classes)

    def sparse_losses(self, logits, tgt, smoothing):
        """(per-frame losses, a function giving log p of each frame's target class) for class-index targets, without
        a one-hot target: with label smoothing s over C classes the loss is -(s / (C - 1)) sum_c log p_c -
        (1 - s - s / (C - 1)) log p_target, minus the smoothed target's entropy (no [frames, C] target tensor)."""
        classes = self.layer.output.feature_dim

        def at_target(x):
            return rf.gather(x, indices=tgt, axis=classes, clip_to_valid=True)
        if not smoothing and not self.normalized:  # the backend's fused sparse softmax cross entropy
            return (rf.softmax_cross_entropy_with_logits(logits=logits, targets=tgt, axis=classes),
                    lambda: at_target(rf.log_softmax(logits, axis=classes)))
        log_probs = logits if self.normalized else rf.log_softmax(logits, axis=classes)
        target = at_target(log_probs)
        if not smoothing:
            return -target, lambda: target
        low = smoothing / (classes.size - 1)
        losses = -(1.0 - smoothing - low) * target - low * rf.reduce_sum(log_probs, axis=classes)
        return losses - smoothed_target_entropy(smoothing, classes.size), lambda: target


def smoothed_target_entropy(smoothing: float, classes: int) -> float:
    """The entropy of a label-smoothed one-hot target (1 - s on the class, s / (classes - 1) on each other): what
    RETURNN subtracts from the smoothed cross entropy of sparse targets, so that a perfect output has loss 0."""
    low = smoothing / (classes - 1)
    return -((1.0 - smoothing) * math.log(1.0 - smoothing) + (classes - 1) * low * math.log(low + 1e-20))


def argmax_errors(out, tgt, classes: Dim):
    """Per frame: whether the output's argmax over `classes` is not the target class (a sparse target) or the
    target's argmax (a dense one): RETURNN's frame error."""
    predicted = rf.reduce_argmax(out, axis=classes)
    wanted = rf.cast(tgt, "int32") if tgt.sparse_dim is not None else rf.reduce_argmax(tgt, axis=classes)
    return rf.compare(predicted, "not_equal", wanted)


def output_logits(ctx, layer, output, in_log_space: bool):
    """Logits of the layer's output distribution, laid out as the output: those a softmax recorded, the output
    itself if it is in log space, else log(max(p, LOG_EPS))."""
    logits = ctx.logits_of(layer)
    if logits is not None:
        return logits
    if in_log_space:
        return output
    return rf.log(rf.maximum(output, LOG_EPS))


class DistanceLoss(FramewiseLoss):
    """Base of the losses on the difference of output and target. The output must be float; the target has
    its frames (see `frames_fit`) and either a feature dim of the same size, or class indices of that many
    classes (compared as one-hot vectors). The error is RETURNN's default frame error: the output's argmax is
    not the target's (none for an output without a feature dim)."""

    options = dict(COMMON_LOSS_OPTIONS)
    error_name = "fer"

    def check_templates(self, out, target):
        self.check_float_output(out)
        if not frames_fit(out, target):
            raise self.target_error(out, target, "their axes (other than batch and feature) differ")
        if target.sparse:
            if target.dim != out.dim:
                raise self.target_error(out, target, f"{target.dim} classes (one-hot) vs a feature size of "
                                        f"{out.dim}", suggestion=f"set n_out={target.dim}")
        elif target.dim != out.dim:
            raise self.target_error(out, target, f"feature size {target.dim} vs {out.dim}",
                                    suggestion=None if target.dim is None else f"set n_out={target.dim}")
        elif target.dtype not in FLOAT_DTYPES:
            raise self.target_error(out, target, f"the target's dtype is {target.dtype}, not float")

    def frame_losses(self, out, tgt):
        features = self.layer.output.feature_dim
        errors = None if features is None else argmax_errors(out, tgt, features)
        return self.distance(out - self.dense_target(tgt, out.dtype)), errors

    def distance(self, diff):  # pragma: no cover - each loss overrides
        """Per frame [N], from the differences output - target [N, F] (or [N])."""
        raise NotImplementedError


class MeanSquaredError(DistanceLoss):
    """Squared difference of output and target, averaged over the feature dim (as RETURNN), per valid frame;
    the frame error as `DistanceLoss` says. A sparse target is compared as one-hot vectors. Options (loss_opts): the common ones
    (`use_flatten_frames`, `use_normalized_loss`, `custom_norm_factor`, `scale`)."""

    loss_class = "mse"

    def distance(self, diff):
        return self.per_frame(rf.square(diff), "mean")


class L1Loss(DistanceLoss):
    """Absolute difference of output and target, summed over the feature dim, per valid frame.
    Options: the common ones (see `mse`)."""

    loss_class = "l1"

    def distance(self, diff):
        return self.per_frame(rf.abs(diff), "sum")


class MeanL1Loss(DistanceLoss):
    """Absolute difference of output and target, averaged over the feature dim like `mse`.
    Options: the common ones (see `mse`)."""

    loss_class = "mean_l1"

    def distance(self, diff):
        return self.per_frame(rf.abs(diff), "mean")


class BinaryCrossEntropyLoss(FramewiseLoss):
    """Binary cross entropy of the output as logits (not probabilities) against a dense 0/1 target of the
    same shape, averaged over the feature dim per valid frame. The error per frame is the fraction of features
    where (output > 0) != (target > 0.5) (for one feature: the frame error rate). Options (loss_opts):
    `pos_weight` (None: the weight of positive labels, as in `rf.binary_cross_entropy`) and the
    common ones. Registered as "bin_ce" (RETURNN's name) and "binary_ce"."""

    loss_class = "bin_ce"
    error_name = "fer"
    options = {**COMMON_LOSS_OPTIONS, "pos_weight": Option(None, NUMBER + (NONE_TYPE,))}

    def check_templates(self, out, target):
        self.check_float_output(out)
        if target.sparse:
            raise self.target_error(out, target, "it holds class indices, but binary cross entropy needs a dense "
                                    "0/1 target of the output's shape", suggestion="use 'ce' for class indices")
        if not frames_fit(out, target) or target.dim != out.dim:
            raise self.target_error(out, target, "they must have the same shape")

    def frame_losses(self, logits, tgt):
        labels = rf.cast(tgt, logits.dtype)
        losses = rf.binary_cross_entropy(from_logits=logits, targets=labels, pos_weight=self.opts["pos_weight"])
        wrong = rf.cast(rf.compare(logits > 0, "not_equal", labels > 0.5), logits.dtype)
        return self.per_frame(losses, "mean"), self.per_frame(wrong, "mean")


class BinaryCrossEntropyLossAlias(BinaryCrossEntropyLoss):
    """`bin_ce` under the name "binary_ce"."""

    loss_class = "binary_ce"


class AsIsLoss(CheckedLoss):
    """The layer's output, summed over valid frames, is the loss (no target is used). Options: the common ones.
    The output must be float."""

    loss_class = "as_is"
    need_target = False
    options = dict(COMMON_LOSS_OPTIONS)

    def check_templates(self, out, target):
        self.check_float_output(out)

    def sums(self, ctx, output, target):
        packed, frames = rf.pack_padded(output, dims=frame_dims(self.layer.output))
        return rf.reduce_sum(packed, axis=packed.dims), None, rf.dim_size_tensor(frames)


def total_length(dim: Dim):
    """The number of frames of `dim` in the batch (a scalar Tensor)."""
    sizes = rf.dim_size_tensor(dim)
    if sizes.dims:
        return rf.reduce_sum(sizes, axis=sizes.dims)
    return sizes * rf.dim_size_tensor(batch_dim)
