"""`cum_concat`: the frames of all steps so far, as a new axis (a step state in a loop body), and the helpers
that loop layers with a growing history share (`self_attention` keeps its keys and values this way)."""

from typing import Optional

from netcompiler import frontend as rf
from netcompiler.layer_base import NONE_TYPE, LayerBase, Option
from netcompiler.tensor import SPATIAL, Data, Dim, Tensor, batch_dim


def in_loop_step(layer: LayerBase) -> bool:
    """Whether `layer` runs once per step of a loop body (it then carries a step state); a layer in a network
    nested in a loop body cannot carry one yet (ConfigError)."""
    network = layer.network
    if network.per_step:
        return True
    if network.inside_loop:
        raise layer.error(f"'{layer.layer_class}' keeps a state from step to step, which netcompiler supports only "
                          f"directly in a loop body, not in a network nested in one", option="class",
                          suggestion="move the layer into the rec unit itself")
    return False


def with_history_dim(data: Data, history: Dim, name: str) -> Data:
    """`data` with the new axis `history` after the batch dim (in front if there is none), as its time dim."""
    at = 1 if data.dims and data.dims[0].is_batch else 0
    return data.copy(name=name, dims=data.dims[:at] + (history,) + data.dims[at:], time_dim=history)


def empty_history(layer: LayerBase, template: Data, history: Dim) -> Tensor:
    """A Tensor laid out as `template` (which has the dynamic axis `history`) with no frames on `history`."""
    one = frame_dim(layer)
    dims = [one if d == history else d for d in template.dims]
    zeros = rf.zeros(dims, dtype=template.dtype)
    return rf.slice(zeros, axis=one, start=0, end=0, out_dim=history)


def frame_dim(layer: LayerBase) -> Dim:
    """The size-1 axis a single frame has before it joins a history."""
    return layer.new_dim(1, SPATIAL, f"{layer.name}:frame")


def append_frame(inputs, history_value: Tensor, frame: Tensor, history: Dim) -> Tensor:
    """`history_value` (frames of the steps before, on axis `history`) with `frame` (the step's, without that
    axis) appended; sets the sizes of `history` in the step (step index + 1 for every sequence)."""
    one = frame_dim(inputs.layer)
    grown = rf.concat((history_value, history), (rf.expand_dim(frame, one), one), out_dim=history)
    count = inputs.loop_state.step_index + 1
    inputs.set_size(history, rf.full([batch_dim], 0, dtype="int32") + count)
    return grown


class CumConcatLayer(LayerBase):
    """In a loop body: the input of every step so far, concatenated along a new axis (size: step index + 1).
    Outside a loop: the input with its time axis replaced by that new axis (same sizes), the whole sequence at once.

    Options: `out_spatial_dim` (None: a new dim '<layer>:cum_concat'; a Dim: that one). The new axis follows the
    batch dim inside a loop; the step state is the history itself, which grows by one frame per step (so the
    layer cannot be read as "prev:" or stacked over the loop: its shape differs per step).
    """

    layer_class = "cum_concat"
    options = {"out_spatial_dim": Option(None, (Dim, NONE_TYPE), doc="the new axis")}

    def make_output(self):
        x = self.input_data
        history = self.history_dim()
        if x.has_dim(history):
            raise self.error(f"'out_spatial_dim' {history.short_repr()} is already a dim of the input "
                             f"{x.describe()}", option="out_spatial_dim", suggestion="give a new dim")
        if in_loop_step(self):
            return with_history_dim(x, history, self.name)
        if x.time_dim is None or not x.time_dim.is_dynamic:
            raise self.error(f"outside a loop, cum_concat replaces the input's (dynamic) time axis, and "
                             f"{x.describe()} has none", option="from",
                             suggestion="use it in a rec unit, or give it an input with a time axis")
        return x.copy_replace_dim(x.time_dim, history, name=self.name)

    def history_dim(self) -> Dim:
        given: Optional[Dim] = self.opts["out_spatial_dim"]
        if given is None:
            return self.new_dim(None, SPATIAL, f"{self.name}:cum_concat")
        if given.size is not None or given.is_batch:
            raise self.error(f"'out_spatial_dim' {given.short_repr()} must be a dynamic spatial dim (its size "
                             f"grows with the steps)", option="out_spatial_dim")
        return given

    def initial_step_state(self, inputs):
        if not in_loop_step(self):
            return None
        return {"history": empty_history(self, self.output, self.history_dim())}

    def emit(self, inputs):
        x, history = inputs.x, self.history_dim()
        if inputs.loop_state is None:
            time = self.input_data.time_dim
            inputs.set_size(history, inputs.run.size(time))
            return rf.replace_dim(x, in_dim=time, out_dim=history)
        grown = append_frame(inputs, inputs.step_state["history"], x, history)
        inputs.set_step_state({"history": grown})
        return grown
