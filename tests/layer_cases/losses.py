"""Template cases for the losses' checks of output against target (mse, l1, mean_l1, bin_ce, as_is, ctc, ce)."""

from layer_harness import DEFAULT_EXTERN, ErrorCase, LayerCase
from netcompiler.errors import InvalidOptionError, UnknownOptionError

EXTERN = {**DEFAULT_EXTERN, "feats": {"dim": 6}, "img": {"shape": (None, 3, 6)}, "labels": {"dim": 5, "sparse": True}}
OUT6 = "[B, T|'time:data', F|'output:feature'(6)] float32"


def with_loss(loss, n_out=6, target=None, loss_opts=None, **extra):
    layer = {"class": "linear", "n_out": n_out, "from": "data", "loss": loss, **extra}
    if target is not None:
        layer["target"] = target
    if loss_opts is not None:
        layer["loss_opts"] = loss_opts
    return {"output": layer}


def case(id, network, expect):
    return LayerCase(id, network, expect, extern_data=EXTERN)


def error(id, network, contains, error_class=InvalidOptionError):
    return ErrorCase(id, network, error_class, ["layer 'output'"] + contains, extern_data=EXTERN)


CASES = [
    case("loss-mse-dense-target", with_loss("mse", target="data"), {"output": OUT6}),
    case("loss-mse-target-with-own-time", with_loss("mse", target="feats", loss_opts={"use_normalized_loss": True}),
         {"output": OUT6}),
    case("loss-l1-sparse-target-one-hot", with_loss("l1", n_out=4, target="classes"),
         {"output": "[B, T|'time:data', F|'output:feature'(4)] float32"}),
    case("loss-mean-l1", with_loss("mean_l1", target="feats", loss_opts={"scale": 0.5}), {"output": OUT6}),
    case("loss-bin-ce", with_loss("bin_ce", target="feats", loss_opts={"pos_weight": 2.0}), {"output": OUT6}),
    case("loss-binary-ce-alias", with_loss("binary_ce", target="data"), {"output": OUT6}),
    case("loss-as-is", with_loss("as_is", n_out=1), {"output": "[B, T|'time:data', F|'output:feature'(1)] float32"}),
    case("loss-ctc", with_loss("ctc", n_out=5, loss_opts={"beam_width": 12, "output_in_log_space": True},
                               activation="log_softmax"),
         {"output": "[B, T|'time:data', F|'output:feature'(5)] float32"}),
    case("loss-ce-common-options", with_loss("ce", n_out=4, loss_opts={"label_smoothing": 0.1,
                                                                       "use_flatten_frames": False}),
         {"output": "[B, T|'time:data', F|'output:feature'(4)] float32"}),
]

ERROR_CASES = [
    error("loss-mse-feature-size", with_loss("mse", n_out=5, target="data"),
          ["loss 'mse'", "target 'data'", "feature size 6 vs 5", "set n_out=6"]),
    error("loss-mse-extra-axis", with_loss("mse", target="img"),
          ["loss 'mse'", "[B, T|'time:img', 'img:static1'(3), F|'img:feature'(6)]", OUT6.split(" float32")[0],
           "axes (other than batch and feature) differ"]),
    error("loss-l1-class-count", with_loss("l1", n_out=3, target="classes"),
          ["loss 'l1'", "4 classes (one-hot) vs a feature size of 3", "set n_out=4"]),
    error("loss-mean-l1-sparse-output", {"output": {"class": "copy", "from": "data:classes", "loss": "mean_l1"}},
          ["loss 'mean_l1'", "sparse 'classes:sparse'(4) int32", "must hold float values"]),
    error("loss-bin-ce-sparse-target", with_loss("bin_ce", n_out=4, target="classes"),
          ["loss 'bin_ce'", "class indices", "use 'ce'"]),
    error("loss-binary-ce-shape", with_loss("binary_ce", n_out=2, target="data"),
          ["loss 'binary_ce'", "same shape"]),
    error("loss-as-is-not-float", {"output": {"class": "copy", "from": "data:classes", "loss": "as_is"}},
          ["loss 'as_is'", "must hold float values"]),
    error("loss-ctc-no-blank", with_loss("ctc", n_out=4), ["loss 'ctc'", "4 classes plus blank", "set n_out=5"]),
    error("loss-ctc-dense-target", with_loss("ctc", n_out=7, target="feats"), ["loss 'ctc'", "sparse target"]),
    error("loss-ctc-use-native", with_loss("ctc", n_out=5, loss_opts={"use_native": True}),
          ["loss 'ctc'", "'use_native'", "not supported"]),
    error("loss-ctc-beam-width-type", with_loss("ctc", n_out=5, loss_opts={"beam_width": "wide"}),
          ["loss 'ctc'", "'beam_width' must be int", "'wide'"]),
    error("loss-ctc-beam-width-zero", with_loss("ctc", n_out=5, loss_opts={"beam_width": 0}),
          ["loss 'ctc'", "at least 1"]),
    error("loss-ctc-unknown-option", with_loss("ctc", n_out=5, loss_opts={"beam_with": 3}),
          ["'beam_with'", "did you mean 'beam_width'?"], UnknownOptionError),
    error("loss-ce-unsupported-option", with_loss("ce", n_out=4, loss_opts={"label_smoothing_gaussian": True}),
          ["loss 'ce'", "'label_smoothing_gaussian'", "not supported"]),
    error("loss-unknown-name", with_loss("mse2"), ["unknown loss 'mse2'", "did you mean 'mse'?"]),
]
