"""framewise_statistics: frame error, cross entropy, perplexity and a histogram of the target's probability of a
softmax layer against its target, over all frames, the silence frames and the others."""

import weakref
from typing import Dict, List, Optional

from netcompiler import frontend as rf
from netcompiler.layer_base import REQUIRED, LayerBase, Option
from netcompiler.layer_parts import LayerWithParts, PartLayer
from netcompiler.references import target_reference
from netcompiler.tensor import FEATURE, SPATIAL, Data, Dim

SUBSETS = ("", "_sil", "_no_sil")
"""All valid frames, those whose target is the silence label, the others."""
MEANS = ("loss_ce", "frame_error", "true_label_prob_histogram", "loss_perplexity")
STATISTICS = tuple(f"batch_seq_length{s}" for s in SUBSETS) + tuple(f"batch_{m}{s}" for m in MEANS for s in SUBSETS)
"""The sublayers "<layer>/<name>": RETURNN's batch statistics of the layer, each of the pass's batch."""


class FramewiseStatisticsLayer(LayerWithParts):
    """Statistics of a softmax layer (`from`, one layer whose output is a softmax over its feature axis) against
    the sparse target that layer names in its own `target` option, per frame paired by index: the output itself
    is a dummy scalar 0 (int32), as in RETURNN; the statistics are its sublayers "<layer>/<name>", one per
    entry of RETURNN's `stats` for the pass's batch (see STATISTICS): `batch_seq_length` (int32 frame counts),
    `batch_loss_ce` (mean cross entropy), `batch_frame_error` (mean of argmax != target),
    `batch_loss_perplexity` (exp of the mean cross entropy), `batch_true_label_prob_histogram` ([bins]: the
    share of frames whose target probability rounds to each bin), each over all valid frames and with the
    suffixes `_sil` (target == `sil_label_idx`) and `_no_sil`; a subset without frames gives NaN means.
    RETURNN's engine prints its stats at the end of each epoch; netcompiler's engine shows loss scores only, so
    make a statistic visible with a layer that reads it, e.g. {"class": "print", "from": "<layer>/batch_frame_error"}
    (a line per pass).

    Options: `sil_label_idx` (required: the silence class), `histogram_num_bins` (20). A `target` option of this
    layer is refused (RETURNN fails on it too: the target is the source layer's).
    Departure from RETURNN: the statistics RETURNN accumulates over the whole run in extra variables
    (`accumulated_*`) are not kept (a run's totals are the dev/train scores of a loss on the softmax layer).
    """

    layer_class = "framewise_statistics"
    options = {
        "sil_label_idx": Option(REQUIRED, (int,), doc="the class index of silence"),
        "histogram_num_bins": Option(20, (int,)),
    }

    @classmethod
    def transform_config_dict(cls, opts, network, get_layer):
        opts = super().transform_config_dict(opts, network, get_layer)
        sources = opts["from"]
        if len(sources) == 1 and isinstance(sources[0].opts.get("target"), str):
            source = sources[0]
            opts["_target_layer"] = network.get_layer(target_reference(source.opts["target"], source.name),
                                                      source.name.rsplit("/", 1)[-1], "target")
        return opts

    def __init__(self, name, network, opts):
        self._runs = weakref.WeakKeyDictionary()
        super().__init__(name, network, opts)

    def make_output(self) -> Data:
        if self.opts["target"] is not None:
            raise self.error("'target' is not an option of framewise_statistics: the target is the one of its "
                             "source layer", option="target", suggestion="set 'target' on the softmax layer")
        if len(self.sources) != 1:
            raise self.error(f"needs exactly one softmax layer in 'from', not {len(self.sources)}", option="from")
        source = self.sources[0]
        probs = source.output
        if not _is_softmax(source) or probs.feature_dim is None or probs.time_dim is None:
            raise self.error(f"'from' layer '{source.name}' ({source.layer_class}) {probs.describe()} must be a "
                             f"softmax over classes on a time axis", option="from",
                             suggestion="a 'softmax' layer, or 'linear' with 'activation': 'softmax'")
        target = self.opts.get("_target_layer")
        if target is None:
            raise self.error(f"'from' layer '{source.name}' names no 'target'", option="from",
                             suggestion=f"set 'target' on '{source.name}'")
        labels = target.output
        others = [d for d in labels.dims if not d.is_batch and d != labels.time_dim]
        if labels.sparse_dim is None or labels.time_dim is None or others or \
                labels.sparse_dim.size != probs.feature_dim.size:
            raise self.error(f"the target '{target.name}' {labels.describe()} of '{source.name}' must be sparse "
                             f"labels [B, T] of the {probs.feature_dim.size} classes of {probs.describe()}",
                             option="from")
        if not 0 <= self.opts["sil_label_idx"] < probs.feature_dim.size:
            raise self.error(f"'sil_label_idx' {self.opts['sil_label_idx']} is no class of {probs.describe()}",
                             option="sil_label_idx")
        if self.opts["histogram_num_bins"] < 1:
            raise self.error("'histogram_num_bins' must be >= 1", option="histogram_num_bins")
        return Data(self.name, (), "int32")

    def emit(self, inputs):
        return rf.convert_to_tensor(0, dims=(), dtype="int32", name=self.name)

    # --- the statistics as sublayers ------------------------------------------------------------------------
    def sub_layer_names(self) -> List[str]:
        return list(STATISTICS)

    def get_sub_layer(self, name: str) -> Optional[LayerBase]:
        if name.startswith("accumulated_"):
            raise self.error(f"'{self.name}/{name}': the statistics RETURNN accumulates over the run are not kept "
                             f"by netcompiler", option="from", suggestion=f"read '{self.name}/batch_"
                                                                          f"{name[len('accumulated_'):]}'")
        return super().get_sub_layer(name)

    def make_part_layer(self, part: str) -> "FramewiseStatisticLayer":
        return FramewiseStatisticLayer(self, part)

    def bins_dim(self) -> Dim:
        return self.new_dim(self.opts["histogram_num_bins"], FEATURE, f"{self.name}:histogram-bins")

    def statistics(self, inputs) -> Dict[str, rf.Tensor]:
        """Every statistic of this pass, computed once per pass."""
        if inputs.ctx not in self._runs:
            self._runs[inputs.ctx] = self._compute(inputs)
        return self._runs[inputs.ctx]

    def _compute(self, inputs) -> Dict[str, rf.Tensor]:
        source, target = self.sources[0], self.opts["_target_layer"]
        classes, time = source.output.feature_dim, source.output.time_dim
        frames = self.new_dim(None, SPATIAL, f"{self.name}:frames")
        # the valid frames of all sequences in one axis, source and target alike (as RETURNN flattens them: their
        # lengths must agree)
        batch = [d for d in source.output.dims if d.is_batch]
        probs, _ = rf.pack_padded(inputs.value(source), dims=batch + [time], out_dim=frames)
        labels, _ = rf.pack_padded(inputs.value(target), dims=batch + [target.output.time_dim], out_dim=frames)
        labels = labels.with_data(labels.data.copy(sparse_dim=classes))
        logits = inputs.ctx.logits_of(source)
        if logits is not None:
            log_probs = rf.log_softmax(rf.pack_padded(logits, dims=batch + [time], out_dim=frames)[0], axis=classes)
        else:
            log_probs = rf.safe_log(probs)
        per_frame = {
            "loss_ce": -rf.gather(log_probs, indices=labels, axis=classes),
            "frame_error": rf.cast(rf.compare(rf.reduce(probs, mode="argmax", axis=classes), "not_equal",
                                              labels), "float32"),
        }
        bins = self.bins_dim()
        true_prob = rf.gather(probs, indices=labels, axis=classes)
        index = rf.clip_by_value(rf.cast(rf.round(true_prob * float(bins.size)), "int32"), 0, bins.size - 1)
        per_frame["true_label_prob_histogram"] = rf.one_hot(index.with_data(index.data.copy(sparse_dim=bins)))
        silence = rf.compare(labels, "equal", self.opts["sil_label_idx"])
        subsets = {"": rf.compare(labels, "greater_equal", 0), "_sil": silence, "_no_sil": rf.logical_not(silence)}
        stats = {}
        for suffix, mask in subsets.items():
            n = rf.reduce(rf.cast(mask, "float32"), mode="sum", axis=frames, use_mask=False)
            stats[f"batch_seq_length{suffix}"] = rf.cast(n, "int32")
            for name, value in per_frame.items():
                total = rf.reduce(rf.where(mask, value, 0.0), mode="sum", axis=frames, use_mask=False)
                stats[f"batch_{name}{suffix}"] = total / n
            stats[f"batch_loss_perplexity{suffix}"] = rf.exp(stats[f"batch_loss_ce{suffix}"])
        return stats


def _is_softmax(layer: LayerBase) -> bool:
    return layer.opts.get("activation") == "softmax" or layer.layer_class == "softmax"


class FramewiseStatisticLayer(PartLayer):
    """"<framewise_statistics layer>/<name>": one of its statistics (no own options)."""

    def make_output(self) -> Data:
        if self.part.startswith("batch_seq_length"):
            return Data(self.name, (), "int32")
        if "histogram" in self.part:
            bins = self.parent.bins_dim()
            return Data(self.name, (bins,), "float32", feature_dim=bins)
        return Data(self.name, (), "float32")

    def emit(self, inputs):
        return self.parent.statistics(inputs)[self.part]
