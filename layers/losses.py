"""Loss classes: what "loss": NAME on a layer computes against its target.

Each loss checks at template time that the layer's output and the target fit
it (`check_templates`), after its "loss_opts" values have been checked against
their declarations.
"""

from typing import Optional

from netcompiler.layer_base import NONE_TYPE, NUMBER, Option
from netcompiler.loss_base import LossBase
from netcompiler.tensor import FLOAT_DTYPES, Data


# loss_opts every loss accepts (RETURNN's Loss base class)
COMMON_LOSS_OPTIONS = {
    "use_flatten_frames": Option(True, (bool,)),
    "use_normalized_loss": Option(False, (bool,)),
    "custom_norm_factor": Option(None, NUMBER + (NONE_TYPE,)),
    "scale": Option(1.0, NUMBER),
}


class CheckedLoss(LossBase):
    """A loss whose "loss_opts" values are type-checked; options named in `unsupported` must keep their default."""

    unsupported = ()

    def check(self):
        for key, option in self.options.items():
            if key in self.unsupported and self.opts[key] != option.default:
                raise self.error(f"'loss_opts' key '{key}' is not supported by netcompiler yet")
        self.check_templates(self.layer.output, self.target_layer.output if self.target_layer else None)

    def check_templates(self, out: Data, target: Optional[Data]) -> None:
        """Raises a ConfigError if `out` and `target` do not fit this loss."""

    def target_error(self, out: Data, target: Data, problem: str, suggestion: Optional[str] = None):
        return self.error(f"target '{self.target_layer.name}' {target.describe()} does not fit the output "
                          f"{out.describe()}: {problem}", suggestion=suggestion)

    def check_float_output(self, out: Data) -> None:
        if out.sparse or out.dtype not in FLOAT_DTYPES:
            raise self.error(f"the output {out.describe()} {out.dtype} must hold float values")


def frames_fit(out: Data, target: Data) -> bool:
    """Whether the axes other than batch and feature correspond in order: the same Dim, both dynamic (lengths
    are checked at run time), or static of the same size."""
    def frame_dims(data):
        return [d for d in data.dims if not d.is_batch and d != data.feature_dim]

    mine, theirs = frame_dims(out), frame_dims(target)
    return len(mine) == len(theirs) and all(
        a == b or (a.is_dynamic and b.is_dynamic) or a.size == b.size for a, b in zip(mine, theirs))


class CrossEntropyLoss(CheckedLoss):
    """Cross entropy of the layer's output distribution against sparse class targets (or a dense target
    distribution), per valid frame. Options (loss_opts): `label_smoothing` (0.0), `focal_loss_factor` (0.0),
    `use_fused` (True), `label_smoothing_gaussian`, `debug_dump`, `safe_log_opts`, `fake_upper_bound` (not
    supported), and the common ones: `use_flatten_frames` (True), `use_normalized_loss` (False),
    `custom_norm_factor` (None), `scale` (1.0).
    """

    loss_class = "ce"
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


class DistanceLoss(CheckedLoss):
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


class MeanSquaredError(DistanceLoss):
    """Squared difference of output and target, summed over the feature dim, per valid frame.
    Options (loss_opts): the common ones (`use_flatten_frames`, `use_normalized_loss`, `custom_norm_factor`,
    `scale`)."""

    loss_class = "mse"


class L1Loss(DistanceLoss):
    """Absolute difference of output and target, summed. Options: the common ones (see `mse`)."""

    loss_class = "l1"


class MeanL1Loss(DistanceLoss):
    """Absolute difference of output and target, averaged like `mse`. Options: the common ones (see `mse`)."""

    loss_class = "mean_l1"


class BinaryCrossEntropyLoss(CheckedLoss):
    """Binary cross entropy of the output as logits (not probabilities) against a dense 0/1 target of the
    same shape. Options (loss_opts): `pos_weight` (None: the weight of positive labels) and the common ones.
    Registered as "bin_ce" (RETURNN's name) and "binary_ce"."""

    loss_class = "bin_ce"
    options = {**COMMON_LOSS_OPTIONS, "pos_weight": Option(None, NUMBER + (NONE_TYPE,))}

    def check_templates(self, out, target):
        self.check_float_output(out)
        if target.sparse:
            raise self.target_error(out, target, "it holds class indices, but binary cross entropy needs a dense "
                                    "0/1 target of the output's shape", suggestion="use 'ce' for class indices")
        if not frames_fit(out, target) or target.dim != out.dim:
            raise self.target_error(out, target, "they must have the same shape")


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


class CtcLoss(CheckedLoss):
    """Connectionist temporal classification of the output [B, T, classes + 1 (blank, the last)] against sparse
    label sequences [B, T'] (T' independent of T). The output is probabilities, or log-probabilities / logits
    with `output_in_log_space`.

    Options (loss_opts): `target_collapse_repeated` (False), `auto_clip_target_len` (False),
    `output_in_log_space` (False), `beam_width` (100, for decoding in eval), `ctc_opts` (None: extra
    arguments of the CTC op), `use_native` (False) and `use_viterbi` (False) (not supported), and the
    common ones.
    """

    loss_class = "ctc"
    options = {**COMMON_LOSS_OPTIONS,
               "target_collapse_repeated": Option(False, (bool,)), "auto_clip_target_len": Option(False, (bool,)),
               "output_in_log_space": Option(False, (bool,)), "beam_width": Option(100, (int,)),
               "ctc_opts": Option(None, (dict, NONE_TYPE)), "use_native": Option(False, (bool,)),
               "use_viterbi": Option(False, (bool,))}
    unsupported = ("use_native", "use_viterbi")

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
