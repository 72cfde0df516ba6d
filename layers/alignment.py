"""Alignments of a network's frame scores to label sequences: fast_bw (forward-backward posteriors, the soft
alignment Baum-Welch training uses as its target) and forced_align (the Viterbi best path), with the dynamic
programs of `netcompiler.frontend.alignment`."""

import math
import weakref
from typing import Dict, List, Tuple

from netcompiler import frontend as rf
from netcompiler.frontend import alignment as dp
from netcompiler.layer_base import NONE_TYPE, NUMBER, LayerBase, Option
from netcompiler.layer_parts import LayerWithParts, PartLayer
from netcompiler.references import target_reference
from netcompiler.tensor import FLOAT_DTYPES, Data, Dim

INPUT_TYPES = ("log_prob", "prob")
CTC_OPTS = ("blank_idx", "label_loop", "ctc_merge_repeated", "edges_bound")


def _time_major(x: Data) -> Data:
    """RETURNN's copy_as_time_major: the time axis first, the others in their order."""
    return x.copy(dims=(x.time_dim,) + tuple(d for d in x.dims if d != x.time_dim))


class _Aligning(LayerBase, register=False):
    """What fast_bw and forced_align share: an input [B, T, C] of (log-)probabilities, its log-probabilities, and
    the results computed once per forward pass (a sub-layer reads them again)."""

    def _scores_input(self) -> Tuple[Dim, Dim, Dim]:
        """(batch, time, classes) of the input; refused unless it is [B, T, C] floats with a static C."""
        x = self.input_data
        batch = [d for d in x.dims if d.is_batch]
        if (x.time_dim is None or x.feature_dim is None or len(batch) != 1 or len(x.dims) != 3 or x.sparse
                or x.dtype not in FLOAT_DTYPES):
            raise self.error(f"the input {x.describe()} {x.dtype} must be scores [B, T, C]: float, a batch, a time "
                             f"and a feature axis (the classes) and nothing else", option="from",
                             suggestion="feed a (log_)softmax output over the classes")
        if x.feature_dim.size is None:
            raise self.error(f"the classes axis {x.feature_dim.short_repr()} of the input is dynamic; it must have "
                             f"a static size", option="from")
        return batch[0], x.time_dim, x.feature_dim

    def _labels_template(self, layer: LayerBase, option: str) -> Data:
        """The template of the label sequences `layer` gives: sparse [B, T'] (RETURNN: shape (None,))."""
        data = layer.output
        if not data.sparse or len(data.dims) != 2 or data.time_dim is None or data.batch_dim_axis is None:
            raise self.error(f"'{option}': '{layer.name}' {data.describe()} must be label sequences, sparse [B, T]",
                             option=option, suggestion="name sparse targets such as 'data:classes'")
        return data

    def _log_probs(self, x: rf.Tensor) -> rf.Tensor:
        if self.opts["input_type"] == "prob":
            return rf.safe_log(x)
        return x

    def _results(self, inputs) -> Dict[str, rf.Tensor]:
        runs = self.__dict__.setdefault("_runs", weakref.WeakKeyDictionary())
        if inputs.ctx not in runs:
            runs[inputs.ctx] = self.compute(inputs)
        return runs[inputs.ctx]

    def compute(self, inputs) -> Dict[str, rf.Tensor]:  # pragma: no cover - each class has its own
        raise NotImplementedError


class FastBaumWelchLayer(_Aligning):
    """Forward-backward (Baum-Welch) over an automaton of each sequence: the posterior of each class at each frame,
    [T, B, C] time-major as in RETURNN (0 on padded frames). The input [B, T, C] holds the frames' scores over the
    classes.

    Options: `align_target` (required): "ctc" (the CTC automaton of the labels of `align_target_key`, a sparse extern
    data key (or "layer:NAME") with C - 1 labels) or "staircase" (frame t is class t, for t below the time lengths
    of `staircase_seq_len_source`; RETURNN's automaton allows no other path); "sprint" (automata from RASR) is
    refused: netcompiler has no RASR (so is `sprint_opts`). `align_target_key` (None), `ctc_opts` (None:
    `blank_idx`, default the last class; `label_loop` / `ctc_merge_repeated` (True; False: RNA-like, each label on
    one frame); `edges_bound` has no effect), `input_type` ("log_prob" or "prob"), `am_scale` (1.0, scales the
    log-probabilities), `min_prob` (0.0; probabilities below are raised to it), `tdp_scale` (1.0, only for "sprint":
    a notice elsewhere), `staircase_seq_len_source` (None; required for "staircase").

    `output_loss(inputs)` is RETURNN's `output_loss`: -log p(labels | scores) per sequence [B] (the loss
    'via_layer' reads it). As from RETURNN's op: no gradient flows back through the posteriors or that score, and
    a sequence without any path (too few frames for its labels) gets posteriors 0 and a loss of 0.
    Departures: `target` is refused with a pointer to `align_target_key` (RETURNN fails on it with an assertion:
    the target would set n_out to the labels without blank); "prob" takes log(max(p, tiny)) of its input, where
    RETURNN reads the log_softmax of a softmax input directly (the same up to float rounding).
    """

    layer_class = "fast_bw"
    options = {
        "align_target": Option(types=(str,), choices=("ctc", "staircase", "sprint"), doc="'ctc' or 'staircase'"),
        "align_target_key": Option(None, (str, NONE_TYPE), doc="the extern data key of the CTC labels"),
        "ctc_opts": Option(None, (dict, NONE_TYPE)),
        "sprint_opts": Option(None, (dict, NONE_TYPE)),
        "input_type": Option("log_prob", (str,), choices=INPUT_TYPES),
        "tdp_scale": Option(1.0, NUMBER),
        "am_scale": Option(1.0, NUMBER),
        "min_prob": Option(0.0, NUMBER),
        "staircase_seq_len_source": Option(None, (str, NONE_TYPE), ref="layer"),
    }

    def make_output(self) -> Data:
        _, _, classes = self._scores_input()
        kind = self.opts["align_target"]
        if kind == "sprint":
            raise self.error("align_target 'sprint' needs RASR (Sprint) to build the automata, which netcompiler "
                             "does not have", option="align_target",
                             suggestion="use align_target 'ctc' with 'align_target_key' (CTC labels), or "
                                        "'staircase'; for a CTC loss use loss 'ctc'")
        if self.opts["sprint_opts"] is not None:
            raise self.error("'sprint_opts' is only for align_target 'sprint', which netcompiler does not have",
                             option="sprint_opts", suggestion="remove 'sprint_opts'")
        if self.opts["target"] is not None:
            raise self.error("'target' cannot name the labels of fast_bw: it would make n_out the target's number of "
                             "labels, while the output has one class more (the blank), and RETURNN refuses it too",
                             option="target", suggestion=f"use 'align_target_key': {self.opts['target']!r}")
        if not 0.0 <= self.opts["min_prob"] <= 1.0:
            raise self.error(f"'min_prob' is {self.opts['min_prob']!r}, expected a probability in [0, 1]",
                             option="min_prob")
        if self.opts["tdp_scale"] != 1.0:
            self.network.notices.append(f"layer '{self.name}': 'tdp_scale' scales the transition scores of RASR "
                                        f"automata (align_target 'sprint'); the '{kind}' automaton has none: "
                                        f"no effect")
        if kind == "ctc":
            self._ctc_options(classes)
            if "edges_bound" in (self.opts["ctc_opts"] or {}):
                self.network.notices.append(f"layer '{self.name}': 'ctc_opts' edges_bound sizes the edge buffer of "
                                            f"RETURNN's native op; netcompiler's automaton needs none: no effect")
        else:
            source = self.opts["staircase_seq_len_source"]
            if source is None:
                raise self.error("align_target 'staircase' needs 'staircase_seq_len_source' (a layer whose time "
                                 "lengths are the number of steps)", option="staircase_seq_len_source",
                                 suggestion="e.g. 'staircase_seq_len_source': 'data'")
            if source.output.time_dim is None or source.output.batch_dim_axis is None:
                raise self.error(f"'staircase_seq_len_source' '{source.name}' {source.output.describe()} has no "
                                 f"batch and time axis to take lengths from", option="staircase_seq_len_source")
            for key in ("align_target_key", "ctc_opts"):
                if self.opts[key] is not None:
                    raise self.error(f"'{key}' is only for align_target 'ctc'", option=key,
                                     suggestion=f"remove '{key}'")
        return _time_major(self.input_data.copy(name=self.name))

    # --- align_target "ctc" -------------------------------------------------------------------------------
    def _labels_layer(self) -> LayerBase:
        key = self.opts["align_target_key"]
        if key is None:
            raise self.error("align_target 'ctc' needs 'align_target_key': the extern data key of the labels",
                             option="align_target_key", suggestion="e.g. 'align_target_key': 'classes'")
        return self.network.get_layer(target_reference(key, self.name), self.name, "align_target_key")

    def _ctc_options(self, classes: Dim) -> Tuple[int, bool]:
        """(blank index, label loop), checked against the labels."""
        labels = self._labels_template(self._labels_layer(), "align_target_key")
        if labels.sparse_dim.size is None or labels.sparse_dim.size + 1 != classes.size:
            raise self.error(f"the input has {classes.size} classes, but the labels of 'align_target_key' "
                             f"{labels.describe()} have {labels.sparse_dim.size}: CTC needs the labels plus one "
                             f"(the blank)", option="from",
                             suggestion=f"give the input {(labels.sparse_dim.size or 0) + 1} classes")
        opts = dict(self.opts["ctc_opts"] or {})
        unknown = sorted(set(opts) - set(CTC_OPTS))
        if unknown:
            raise self.error(f"'ctc_opts' key {unknown[0]!r} unknown", option="ctc_opts",
                             suggestion=f"keys of 'ctc_opts': {', '.join(CTC_OPTS)}")
        if "label_loop" in opts and "ctc_merge_repeated" in opts:
            raise self.error("'ctc_opts' has both 'label_loop' and 'ctc_merge_repeated' (the same setting)",
                             option="ctc_opts", suggestion="keep one of them")
        label_loop = opts.get("label_loop", opts.get("ctc_merge_repeated", True))
        blank = opts.get("blank_idx", labels.sparse_dim.size)
        if not isinstance(label_loop, bool):
            raise self.error(f"'ctc_opts' label_loop must be a bool, not {label_loop!r}", option="ctc_opts")
        if isinstance(blank, bool) or not isinstance(blank, int) or not 0 <= blank < classes.size:
            raise self.error(f"'ctc_opts' blank_idx is {blank!r}, expected a class index 0 to {classes.size - 1}",
                             option="ctc_opts")
        return blank, label_loop

    def dependencies(self) -> List[LayerBase]:
        deps = super().dependencies()
        if self.opts["align_target"] == "ctc":
            deps.append(self._labels_layer())
        return deps

    # --- emission -----------------------------------------------------------------------------------------
    def _scaled_log_probs(self, x: rf.Tensor) -> rf.Tensor:
        log_probs = self._log_probs(rf.stop_gradient(x))
        if self.opts["min_prob"] > 0:
            log_probs = rf.maximum(log_probs, math.log(self.opts["min_prob"]))
        if self.opts["am_scale"] != 1:
            log_probs = log_probs * float(self.opts["am_scale"])
        return log_probs

    def compute(self, inputs) -> Dict[str, rf.Tensor]:
        batch, time, classes = self._scores_input()
        log_probs = self._scaled_log_probs(inputs.x)
        if self.opts["align_target"] == "ctc":
            layer = self._labels_layer()
            blank, label_loop = self._ctc_options(classes)
            labels = inputs.value(layer)
            automaton = dp.ctc_automaton(labels, targets_spatial_dim=layer.output.time_dim, blank_index=blank,
                                         label_loop=label_loop)
            posteriors, log_likelihood = dp.ctc_forward_backward(log_probs, spatial_dim=time, classes_dim=classes,
                                                                 automaton=automaton)
        else:
            posteriors, log_likelihood = self._staircase(inputs, log_probs, time, classes)
        has_path = log_likelihood > dp.NO_PATH / 2
        return {"output": rf.permute(posteriors, self.output.dims), "loss": rf.where(has_path, -log_likelihood, 0.0)}

    def _staircase(self, inputs, log_probs: rf.Tensor, time: Dim, classes: Dim):
        """Frame t on class t, for the frames below the staircase source's lengths."""
        source = self.opts["staircase_seq_len_source"].output
        steps = inputs.run.size(source.time_dim)
        frames = rf.range_over_dim(time)
        on = rf.compare(rf.range_over_dim(classes), "equal", frames) & (frames < steps)
        posteriors = rf.cast(on, log_probs.dtype)
        log_likelihood = rf.reduce(rf.where(on, log_probs, 0.0), mode="sum", axis=[time, classes], use_mask=False)
        return posteriors, log_likelihood

    def emit(self, inputs):
        return self._results(inputs)["output"]

    def output_loss(self, inputs) -> rf.Tensor:
        """RETURNN's `output_loss` of this layer: -log p(labels | scores) [B]."""
        return self._results(inputs)["loss"]


class ForcedAlignmentLayer(_Aligning, LayerWithParts):
    """The Viterbi best path through the CTC (or RNA) automaton of each label sequence: the class of each frame,
    [T, B] time-major int32, sparse over the input's classes, as in RETURNN (0 on padded frames and for a
    sequence without any path). The input [B, T, C] holds the frames' scores over the classes. The sub-layer
    "<layer>/scores" [B] float32 is the path's score, the sum of its frames' log-probabilities (-inf without a
    path). No gradient flows back, as from RETURNN's op.

    Options: `align_target` (required): a layer of label sequences (sparse [B, T']), `topology` (required):
    "ctc" or "rna" (CTC without label loops: each label on exactly one frame), `input_type` (required):
    "log_prob" or "prob", `blank_idx` (-1: the last class), `blank_included` (False: the labels have C - 1
    classes and the blank is the last; True: C classes, the blank any `blank_idx`). Where two paths score the
    same, the first of staying, advancing one state and skipping the blank wins.
    """

    layer_class = "forced_align"
    options = {
        "align_target": Option(types=(str,), ref="layer", doc="the label sequences"),
        "topology": Option(types=(str,), choices=("ctc", "rna"), doc="'ctc' or 'rna' (CTC without label loops)"),
        "input_type": Option(types=(str,), choices=INPUT_TYPES, doc="'log_prob' or 'prob'"),
        "blank_idx": Option(-1, (int,)),
        "blank_included": Option(False, (bool,)),
    }

    def make_output(self) -> Data:
        batch, time, classes = self._scores_input()
        self._blank(classes)
        return Data(self.name, (time, batch), "int32", sparse_dim=classes, time_dim=time)

    def _blank(self, classes: Dim) -> int:
        labels = self._labels_template(self.opts["align_target"], "align_target")
        blank = self.opts["blank_idx"]
        if self.opts["blank_included"]:
            if labels.sparse_dim.size != classes.size:
                raise self.error(f"with 'blank_included' the labels {labels.describe()} must have the input's "
                                 f"{classes.size} classes", option="align_target")
        else:
            if labels.sparse_dim.size is None or labels.sparse_dim.size + 1 != classes.size:
                raise self.error(f"the input has {classes.size} classes, but the labels {labels.describe()} have "
                                 f"{labels.sparse_dim.size}: the input needs the labels plus one (the blank)",
                                 option="align_target",
                                 suggestion="set 'blank_included': True if the labels include the blank")
            if blank != -1:
                raise self.error(f"'blank_idx' is {blank}: without 'blank_included' the blank is the last class",
                                 option="blank_idx", suggestion="remove 'blank_idx' or set 'blank_included': True")
        if blank < 0:
            blank += classes.size
        if not 0 <= blank < classes.size:
            raise self.error(f"'blank_idx' {self.opts['blank_idx']} is no class of the input ({classes.size})",
                             option="blank_idx")
        return blank

    def compute(self, inputs) -> Dict[str, rf.Tensor]:
        batch, time, classes = self._scores_input()
        log_probs = self._log_probs(rf.stop_gradient(inputs.x))
        target = self.opts["align_target"]
        automaton = dp.ctc_automaton(inputs.value(target), targets_spatial_dim=target.output.time_dim,
                                     blank_index=self._blank(classes), label_loop=self.opts["topology"] == "ctc")
        alignment, score = dp.ctc_viterbi(log_probs, spatial_dim=time, classes_dim=classes, automaton=automaton)
        return {"output": rf.permute(alignment, self.output.dims).with_data(self.output), "scores": score}

    def emit(self, inputs):
        return self._results(inputs)["output"]

    # --- the sub-layer "scores" -----------------------------------------------------------------------------
    def sub_layer_names(self) -> List[str]:
        return ["scores"]

    def make_part_layer(self, part: str) -> "ForcedAlignScoresLayer":
        return ForcedAlignScoresLayer(self, part)


class ForcedAlignScoresLayer(PartLayer):
    """"<forced_align layer>/scores": the score of its best path per sequence, [B] float32 (no own options)."""

    def make_output(self) -> Data:
        batch = [d for d in self.parent.output.dims if d.is_batch]
        return Data(self.name, tuple(batch), "float32")

    def emit(self, inputs):
        return self.parent._results(inputs)["scores"]
