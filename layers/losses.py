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
"""

from typing import Optional

from netcompiler.layer_base import NONE_TYPE, NUMBER, Option
from netcompiler.lazy_tf import frames, ops, tf
from netcompiler.loss_base import LossBase
from netcompiler.tensor import FLOAT_DTYPES, Data, batch_dim

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

    Subclasses implement `sums(ctx, output, target) -> (loss_sum, error_sum or None, num_frames)`; `compute`
    applies the common options. `error_name` says what the error is ("fer", "ler"; None: no error)."""

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
        frames = tf.constant(1.0 / norm, tf.float32) if norm is not None else tf.cast(frames, tf.float32)
        return (tf.cast(loss_sum, tf.float32), None if error_sum is None else tf.cast(error_sum, tf.float32),
                frames)

    def sums(self, ctx, output, target):  # pragma: no cover - each loss overrides
        raise NotImplementedError(f"loss '{self.loss_class}' has no TensorFlow emission yet")

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


def batch_major_frames(ctx, data: Data, x):
    """The valid frames of `x` (laid out as `data`): [N, feature] or [N], batch-major, in time order."""
    first = data.copy_with_batch_first()
    return frames.valid_frames(ctx, first, ops.transpose_to(x, data.dims, first.dims))


def per_frame(x, reduce):
    """`reduce` over the feature axis of frames [N, F]; frames [N] without a feature dim stay as they are."""
    return x if x.shape.rank == 1 else reduce(x, axis=-1)


class FramewiseLoss(CheckedLoss):
    """A loss computed per valid frame, the output's frames paired positionally with the target's.

    Subclasses implement `frame_losses(out, target) -> (loss [N], error [N] or None)` on paired frames."""

    def sums(self, ctx, output, target):
        out, tgt = self.paired_frames(ctx, self.frame_input(ctx, output), target)
        losses, errors = self.frame_losses(out, tgt)
        error_sum = None if errors is None else tf.reduce_sum(tf.cast(errors, tf.float32))
        return tf.reduce_sum(losses), error_sum, tf.shape(out)[0]

    def frame_input(self, ctx, output):
        """What is flattened on the output side (laid out as the output)."""
        return output

    def paired_frames(self, ctx, output, target):
        """Valid frames of output and target; a run-time assertion that their lengths agree."""
        checks = [c for c in self.length_checks(ctx) if c is not None]  # eager asserts return None
        with tf.control_dependencies(checks):
            out = batch_major_frames(ctx, self.layer.output, output)
            tgt = batch_major_frames(ctx, self.target_layer.output, target)
        return out, tgt

    def length_checks(self, ctx):
        pairs = zip(frame_axes(self.layer.output), frame_axes(self.target_layer.output))
        return [tf.debugging.assert_equal(
                    ctx.size(a), ctx.size(b),
                    message=f"layer '{self.layer.name}': loss '{self.loss_class}': the lengths of the output's "
                            f"{a.short_repr()} differ from those of target '{self.target_layer.name}' "
                            f"{b.short_repr()}")
                for a, b in pairs if a != b and a.is_dynamic and b.is_dynamic]

    def frame_losses(self, out, tgt):  # pragma: no cover - each loss overrides
        raise NotImplementedError

    def dense_target(self, tgt, dtype):
        """Target frames as values: class indices become one-hot vectors of the output's size."""
        if self.target_layer.output.sparse:
            return tf.one_hot(tgt, self.layer.output.dim, dtype=dtype)
        return tf.cast(tgt, dtype)


class CrossEntropyLoss(FramewiseLoss):
    """Cross entropy of the layer's output distribution against sparse class targets (or a dense target
    distribution), per valid frame; the error is the frame error rate (argmax of the output != target class).

    The log-probabilities come from the logits a softmax layer recorded (stable, and TF's fused softmax cross
    entropy kernels), else from log(max(p, 1e-20)) of the output. Options (loss_opts): `label_smoothing` (0.0:
    the target class gets 1 - s, every other class s / (classes - 1); for a dense target t: (1 - s) t +
    s / (classes - 1) (1 - t); the loss is the plain cross entropy against that distribution), `focal_loss_factor`
    (0.0; g > 0 multiplies each frame's loss by (1 - p_target)^g, p_target the output probability of the target,
    for a dense target the sum of p t; the gradient flows through that factor), `use_fused` (True; accepted:
    the fused kernels are always used), `label_smoothing_gaussian`, `debug_dump`, `safe_log_opts`,
    `fake_upper_bound` (not supported), and the common ones: `use_flatten_frames` (True), `use_normalized_loss`
    (False), `custom_norm_factor` (None), `scale` (1.0).
    """

    loss_class = "ce"
    error_name = "fer"
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

    def frame_input(self, ctx, output):
        return output_logits(ctx, self.layer, output, in_log_space=False)

    def frame_losses(self, logits, tgt):
        sparse = self.target_layer.output.sparse
        smoothing, focal = float(self.opts["label_smoothing"]), float(self.opts["focal_loss_factor"])
        if sparse and not smoothing:
            losses = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.cast(tgt, tf.int32), logits=logits)
        else:
            dist = self.dense_target(tgt, logits.dtype)
            if smoothing:
                dist = (1.0 - smoothing) * dist + smoothing / (self.layer.output.dim - 1) * (1.0 - dist)
            losses = tf.nn.softmax_cross_entropy_with_logits(labels=dist, logits=logits)
        if focal:
            p_target = tf.reduce_sum(self.dense_target(tgt, logits.dtype) * tf.nn.softmax(logits), axis=-1)
            losses *= (1.0 - p_target) ** focal
        predicted = tf.argmax(logits, axis=-1, output_type=tf.int32)
        wanted = tf.cast(tgt, tf.int32) if sparse else tf.argmax(tgt, axis=-1, output_type=tf.int32)
        return losses, tf.not_equal(predicted, wanted)


def output_logits(ctx, layer, output, in_log_space: bool):
    """Logits of the layer's output distribution, laid out as the output: those a softmax recorded, the output
    itself if it is in log space, else log(max(p, LOG_EPS))."""
    logits = ctx.logits_of(layer)
    if logits is not None:
        return logits
    if in_log_space:
        return output
    return tf.math.log(tf.maximum(output, tf.cast(LOG_EPS, output.dtype)))


class DistanceLoss(FramewiseLoss):
    """Base of the losses on the difference of output and target. The output must be float; the target has
    its frames (see `frames_fit`) and either a feature dim of the same size, or class indices of that many
    classes (compared as one-hot vectors)."""

    options = dict(COMMON_LOSS_OPTIONS)

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
        return self.distance(out - self.dense_target(tgt, out.dtype)), None

    def distance(self, diff):  # pragma: no cover - each loss overrides
        """Per frame [N], from the differences output - target [N, F] (or [N])."""
        raise NotImplementedError


class MeanSquaredError(DistanceLoss):
    """Squared difference of output and target, averaged over the feature dim (as RETURNN), per valid frame;
    no error. A sparse target is compared as one-hot vectors. Options (loss_opts): the common ones
    (`use_flatten_frames`, `use_normalized_loss`, `custom_norm_factor`, `scale`)."""

    loss_class = "mse"

    def distance(self, diff):
        return per_frame(tf.square(diff), tf.reduce_mean)


class L1Loss(DistanceLoss):
    """Absolute difference of output and target, summed over the feature dim, per valid frame; no error.
    Options: the common ones (see `mse`)."""

    loss_class = "l1"

    def distance(self, diff):
        return per_frame(tf.abs(diff), tf.reduce_sum)


class MeanL1Loss(DistanceLoss):
    """Absolute difference of output and target, averaged over the feature dim like `mse`; no error.
    Options: the common ones (see `mse`)."""

    loss_class = "mean_l1"

    def distance(self, diff):
        return per_frame(tf.abs(diff), tf.reduce_mean)


class BinaryCrossEntropyLoss(FramewiseLoss):
    """Binary cross entropy of the output as logits (not probabilities) against a dense 0/1 target of the
    same shape, averaged over the feature dim per valid frame. The error per frame is the fraction of features
    where (output > 0) != (target > 0.5) (for one feature: the frame error rate). Options (loss_opts):
    `pos_weight` (None: the weight of positive labels, as tf.nn.weighted_cross_entropy_with_logits) and the
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
        labels = tf.cast(tgt, logits.dtype)
        pos_weight = self.opts["pos_weight"]
        if pos_weight is None:
            losses = tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
        else:
            losses = tf.nn.weighted_cross_entropy_with_logits(labels=labels, logits=logits, pos_weight=pos_weight)
        wrong = tf.cast(tf.not_equal(logits > 0, labels > 0.5), logits.dtype)
        return per_frame(losses, tf.reduce_mean), per_frame(wrong, tf.reduce_mean)


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
        frames = batch_major_frames(ctx, self.layer.output, output)
        return tf.reduce_sum(frames), None, tf.shape(frames)[0]


class CtcLoss(CheckedLoss):
    """Connectionist temporal classification of the output [B, T, classes + 1 (blank, the last)] against sparse
    label sequences [B, T'] (T' independent of T), summed over sequences (tf.nn.ctc_loss). The output is
    probabilities, or log-probabilities / logits with `output_in_log_space`; the logits a softmax layer recorded
    are used where there are some. The error is the label error rate: the edit distance of the decoded output
    (greedy in training or with `beam_width` 1; beam search of `beam_width` in eval) to the labels. Loss and
    error are normalised by the total target length.

    Options (loss_opts): `target_collapse_repeated` (False: merge repeated labels of the target first),
    `auto_clip_target_len` (False: clip the target lengths to the output lengths), `output_in_log_space` (False),
    `beam_width` (100, for decoding in eval), `ctc_opts` (None: extra arguments of the CTC op), `use_native`
    (False) and `use_viterbi` (False) (these three not supported), and the common ones.
    """

    loss_class = "ctc"
    error_name = "ler"
    options = {**COMMON_LOSS_OPTIONS,
               "target_collapse_repeated": Option(False, (bool,)), "auto_clip_target_len": Option(False, (bool,)),
               "output_in_log_space": Option(False, (bool,)), "beam_width": Option(100, (int,)),
               "ctc_opts": Option(None, (dict, NONE_TYPE)), "use_native": Option(False, (bool,)),
               "use_viterbi": Option(False, (bool,))}
    unsupported = ("ctc_opts", "use_native", "use_viterbi")

    def check_templates(self, out, target):
        if self.opts["beam_width"] < 1:
            raise self.error(f"'loss_opts' key 'beam_width' must be at least 1, not {self.opts['beam_width']}")
        self.check_float_output(out)
        if out.time_dim is None or out.feature_dim is None or len(out.dims) != 3 or not out.has_batch:
            raise self.error(f"the output {out.describe()} must be [B, T, classes + blank]")
        if not target.sparse:
            raise self.target_error(out, target, "ctc needs class indices (a sparse target)")
        if target.time_dim is None or len(target.dims) != 2 or not target.has_batch:
            raise self.target_error(out, target, "the target must be label sequences [B, T']")
        if out.dim != target.dim + 1:
            raise self.target_error(out, target, f"the output needs {target.dim} classes plus blank = "
                                    f"{target.dim + 1}, but has {out.dim}", suggestion=f"set n_out={target.dim + 1}")

    def sums(self, ctx, output, target):
        out, tgt = self.layer.output, self.target_layer.output
        logits = output_logits(ctx, self.layer, output, self.opts["output_in_log_space"])
        batch = batch_dim
        logits = ops.transpose_to(logits, out.dims, [out.time_dim, batch, out.feature_dim])  # [T, B, classes + 1]
        logit_lengths = sequence_lengths(ctx, out.time_dim)
        labels = tf.cast(ops.transpose_to(target, tgt.dims, tgt.copy_with_batch_first().dims), tf.int32)
        label_lengths = sequence_lengths(ctx, tgt.time_dim)
        num_frames = tf.reduce_sum(label_lengths)
        if self.opts["target_collapse_repeated"]:
            labels, label_lengths = collapse_repeated(labels, label_lengths)
        if self.opts["auto_clip_target_len"]:
            label_lengths = tf.minimum(label_lengths, logit_lengths)
        sparse = sparse_labels(labels, label_lengths)
        loss = tf.nn.ctc_loss(labels=sparse, logits=logits, label_length=None, logit_length=logit_lengths,
                              logits_time_major=True, blank_index=-1)
        decoded = self.decode(ctx, logits, logit_lengths)
        errors = tf.edit_distance(decoded, tf.cast(sparse, tf.int64), normalize=False)
        return tf.reduce_sum(loss), tf.reduce_sum(errors), num_frames

    def decode(self, ctx, logits, lengths):
        """The best label sequences (sparse, int64) for time-major logits; blank is the last class."""
        beam_width = self.opts["beam_width"]
        if ctx.training or beam_width == 1:
            decoded, _ = tf.nn.ctc_greedy_decoder(logits, lengths, merge_repeated=True)
        else:
            decoded, _ = tf.nn.ctc_beam_search_decoder(logits, lengths, beam_width=beam_width, top_paths=1)
        return decoded[0]


def sequence_lengths(ctx, dim):
    """int32 [B] lengths of `dim` (a static dim: its size for every sequence)."""
    size = ctx.size(dim)
    return tf.fill([ctx.batch_size], size) if isinstance(size, int) else size


def sparse_labels(labels, lengths):
    """[B, T'] label sequences cut to their lengths, as a SparseTensor."""
    indices = tf.where(tf.sequence_mask(lengths, tf.shape(labels)[1]))
    return tf.SparseTensor(indices, tf.gather_nd(labels, indices), tf.shape(labels, out_type=tf.int64))


def collapse_repeated(labels, lengths):
    """[B, T'] label sequences with runs of the same label merged into one; their new lengths."""
    valid = tf.sequence_mask(lengths, tf.shape(labels)[1])
    repeated = tf.concat([tf.zeros_like(labels[:, :1], dtype=tf.bool), tf.equal(labels[:, 1:], labels[:, :-1])],
                         axis=1)
    kept = tf.ragged.boolean_mask(labels, tf.logical_and(valid, tf.logical_not(repeated)))
    return kept.to_tensor(), tf.cast(kept.row_lengths(), tf.int32)
