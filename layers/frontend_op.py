"""The layers a frontend model's ops become where no catalogue layer computes them (`netcompiler/backends/layers/`):
`frontend_op` runs the recorded op again; the `frontend_marked` loss is a loss the model marked."""

import importlib

from netcompiler import frontend as rf
from netcompiler.backends.layers.recorder import pick, substitute_inputs
from netcompiler.layer_base import NONE_TYPE, LayerBase, Option
from netcompiler.tensor import Data, Dim, Tensor

from .losses import AsIsLoss


class FrontendOpLayer(LayerBase):
    """One call of a frontend op, `op(*args, **kwargs)`, on the values of the layers in `from` (each `InputRef`
    in the arguments stands for one of them), as the layer-dict backend recorded it; the layer's value is the
    result's element at `output_path`.

    Its template is the recorded one (`template`): the op computed it when the model ran on the probe batch. At
    emission the op runs again on this run's inputs; a dim the op makes anew in each call (one it was not given,
    e.g. merge_dims without `out_dim`) is taken to be the recorded one at its position, with its sizes.
    """

    layer_class = "frontend_op"
    default_from = ()
    options = {
        "op": Option(types=(str,), doc='"module:function" of the frontend op'),
        "args": Option((), (list, tuple)),
        "kwargs": Option(None, (dict, NONE_TYPE)),
        "output_path": Option((), (list, tuple), doc="where the value is in the op's result"),
        "template": Option(types=(Data,), doc="the recorded output template"),
        "call": Option(None, (int, NONE_TYPE), doc="layers with the same call share one run of the op"),
    }

    def make_output(self):
        template = self.opts["template"]
        self.resolve_op()
        return template.copy(name=self.name)

    def resolve_op(self):
        module, _, name = self.opts["op"].partition(":")
        try:
            return getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            raise self.error(f"no frontend op {self.opts['op']!r}", option="op",
                             suggestion="name it as 'netcompiler.frontend.math:relu'") from None

    def emit(self, inputs):
        sources = inputs.sources
        call = self.opts["call"]
        results = _call_results(inputs.run)
        key = None if call is None else (self.network.prefix, call, tuple(id(s.raw) for s in sources))
        if key is None or key not in results:
            args = substitute_inputs(list(self.opts["args"]), sources)
            kwargs = substitute_inputs(dict(self.opts["kwargs"] or {}), sources)
            result = self.resolve_op()(*args, **kwargs)
            if key is not None:
                results[key] = (result, sources)  # the sources stay alive, so their ids stay theirs
        else:
            result = results[key][0]
        y = pick(result, tuple(self.opts["output_path"]))
        return adopt_recorded_dims(y, self.output, inputs.run)


def _call_results(run) -> dict:
    """The results of the multi-output op calls of this run (one per call and inputs), kept on the run."""
    results = getattr(run, "_frontend_op_results", None)
    if results is None:
        results = run._frontend_op_results = {}
    return results


def adopt_recorded_dims(y: Tensor, template: Data, run) -> Tensor:
    """`y` with each dim the template lacks replaced by the template's dim at its position (same static size,
    or both dynamic: the run learns the recorded dim's sizes); `y` unchanged where its dims are the template's."""
    if set(y.dims) == set(template.dims) or len(y.dims) != len(template.dims):
        return y
    recorded = [d for d in template.dims if d not in y.dims]
    dims, new = list(y.dims), iter(recorded)
    for i, dim in enumerate(dims):
        if dim in template.dims:
            continue
        target = next(new, None)
        if target is None or target.size != dim.size:
            return y  # the template check after emission names the mismatch
        if dim.is_dynamic and target not in run.sizes:
            run.sizes.set(target, run.size(dim))
        dims[i] = target
    return Tensor(y.data.copy(dims=tuple(dims), feature_dim=None, time_dim=None), y.raw)


class FrontendMarkedLoss(AsIsLoss):
    """A loss the model marked (`mark_as_loss`): the layer's value summed over its valid frames (the padded
    frames of its dynamic dims do not count), normalised by their number, as the model run directly sums it
    (unlike `as_is`, every dim counts as a frame dim, and a scalar is one frame). The output must be float.

    The model's `custom_inv_norm_factor` replaces the number of frames: a Tensor is the `target` ("layer:x"),
    summed; a number is the loss option `num_frames`."""

    loss_class = "frontend_marked"
    options = dict(AsIsLoss.options, num_frames=Option(None, (int, float, NONE_TYPE)))

    def sums(self, ctx, output, target):
        dims = list(output.dims)
        loss_sum = rf.reduce_sum(output, axis=dims) if dims else output
        if target is not None:
            factor = rf.cast(target, "float32")
            return loss_sum, None, rf.reduce_sum(factor, axis=list(factor.dims)) if factor.dims else factor
        if self.opts.get("num_frames") is not None:
            return loss_sum, None, rf.convert_to_tensor(float(self.opts["num_frames"]), dtype="float32")
        frames = rf.reduce_sum(rf.ones(dims, dtype="float32"), axis=dims) if dims else \
            rf.convert_to_tensor(1.0, dtype="float32")
        return loss_sum, None, frames


class FrontendScanStateLayer(LayerBase):
    """One result of an `rf.scan` the layer-dict backend made a `rec` layer: from [the rec layer (it runs the loop
    first), its stacked state (zero past each sequence's end), the initial state], the final state of each sequence (`final`: the state
    after its last frame, the initial state for an empty sequence) or the stacked states as rf.scan gives them
    (past a sequence's end its final state), laid out as the recorded `template`."""

    layer_class = "frontend_scan_state"
    default_from = ()
    options = {
        "spatial_dim": Option(types=(Dim,), doc="the dim rf.scan ran over"),
        "final": Option(types=(bool,), doc="the final state (True) or the stacked states (False)"),
        "template": Option(types=(Data,), doc="the recorded output template"),
    }

    def make_output(self):
        return self.opts["template"].copy(name=self.name)

    def emit(self, inputs):
        _, stacked, initial = inputs.sources
        time = self.opts["spatial_dim"]
        sizes = inputs.run.size(time)
        if isinstance(sizes, int):
            final = rf.gather(stacked, indices=max(sizes - 1, 0), axis=time) if sizes else initial
        else:
            last = rf.gather(stacked, indices=rf.maximum(sizes - 1, 0), axis=time)
            final = rf.where(sizes > 0, last, initial)
        if self.opts["final"]:
            value = final
        elif isinstance(sizes, int):
            value = stacked
        else:
            value = rf.where(rf.range_over_dim(time) < sizes, stacked, final)
        return rf.permute(value, self.output.dims)
