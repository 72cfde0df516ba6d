"""`self_attention`: multi-head dot-product attention of a sequence to itself (keys and values of the steps so
far as a step state in a loop body)."""

from netcompiler import frontend as rf
from netcompiler.errors import DimMismatchError
from netcompiler.layer_base import NONE_TYPE, NUMBER, LayerBase, Option, ParamSpec
from netcompiler.tensor import FEATURE, SPATIAL, Dim, Tensor

from .attention import check_float_input
from .cum_concat import append_frame, empty_history, in_loop_step

# RETURNN options netcompiler refuses (with what to do instead).
_UNSUPPORTED = {
    "restrict_state_length": "a history cut to its last frames",
    "state_var_lengths": "states kept in variables",
    "initial_state": "a state given before the first step",
}


class SelfAttentionLayer(LayerBase):
    """Multi-head scaled dot-product self-attention: each frame's query attends to the keys of the frames of its
    sequence (all of them; only those up to itself with `attention_left_only`) and averages their values.

    Options: `num_heads`, `total_key_dim` (both required; key and value sizes split evenly over the heads),
    `n_out` (required: the total value size, the output's feature size), `attention_left_only` (False),
    `attention_dropout` (0.0, on the attention weights in training), `forward_weights_init` ("glorot_uniform"),
    `key_shift` (None: a layer of [queries (or 1), keys, key size per head], no batch axis, e.g. a
    'relative_positional_encoding'; as in RETURNN its dot product with each head's (scaled) query is added to the
    energies: the shift is added to every key, per query frame).
    One parameter `QKV` [in, 2 * total_key_dim + n_out] as in RETURNN: its columns are per head (query, key,
    value) in turn. In a loop body a step attends to the keys of every step so far (its step state), which equals
    `attention_left_only` over the whole sequence. The output is batch-major (as RETURNN's, also for a time-major
    input). RETURNN's `restrict_state_length`, `state_var_lengths` and
    `initial_state` are not supported.
    """

    layer_class = "self_attention"
    options = {
        "num_heads": Option(types=(int,)),
        "total_key_dim": Option(types=(int,)),
        "attention_left_only": Option(False, (bool,)),
        "attention_dropout": Option(0.0, NUMBER, rate=True),
        "forward_weights_init": Option("glorot_uniform", (str, float, int, dict)),
        "key_shift": Option(None, (str, NONE_TYPE), ref="layer", doc="added to the keys: [queries, keys, key]"),
        **{key: Option(None, ()) for key in _UNSUPPORTED},
    }

    def make_output(self):
        for key, what in _UNSUPPORTED.items():
            if self.opts[key] is not None:
                raise self.error(f"option '{key}' ({what}) is not supported by netcompiler yet", option=key)
        x = self.input_data
        check_float_input(self, x, self.sources[0].name if len(self.sources) == 1 else "from")
        if x.feature_dim is None or x.feature_dim.size is None:
            raise self.error(f"the input {x.describe()} needs a static feature dim", option="from")
        n_out = self.opts["n_out"]
        if n_out is None:
            raise self.error("class 'self_attention' needs option 'n_out' (the total value size)", option="n_out")
        self._head_sizes()
        if not in_loop_step(self) and (x.time_dim is None or x.time_dim.is_batch):
            raise self.error(f"outside a loop, self_attention attends over the time axis, and {x.describe()} has "
                             f"none", option="from")
        out = self.projected_output(self.new_feature_dim(n_out))
        self._key_shift_axes()
        batch = [d for d in out.dims if d.is_batch]  # batch-major, as RETURNN (also of a time-major input)
        return out.copy(dims=batch + [d for d in out.dims if not d.is_batch])

    def _key_shift_axes(self):
        """The (query, key) axes of the `key_shift` layer's output (its key size per head is the third), or None
        without one; a clear error where its template does not fit."""
        layer = self.opts["key_shift"]
        if layer is None:
            return None
        data, key_size = layer.output, self._head_sizes()[1]
        axes = [d for d in data.dims if d != data.feature_dim]
        if data.feature_dim is None or data.feature_dim.size != key_size or len(axes) != 2 or data.sparse or \
                any(d.is_batch for d in data.dims):
            raise self.error(f"'key_shift' layer '{layer.name}' gives {data.describe()}; it must be [queries (or 1), "
                             f"keys, F({key_size}) (the key size per head)] without a batch axis",
                             option="key_shift", kind=DimMismatchError,
                             suggestion=f"e.g. a 'relative_positional_encoding' with n_out {key_size}")
        time = self.input_data.time_dim
        query = axes[0]
        if in_loop_step(self) and query.size != 1:
            raise self.error(f"in a loop step, the query axis of 'key_shift' {data.describe()} must have size 1",
                             option="key_shift", kind=DimMismatchError)
        if not in_loop_step(self) and query != time and query.size != 1 and not query.is_dynamic:
            raise self.error(f"the query axis {data.dim_label(query)} of 'key_shift' {data.describe()} is neither the "
                             f"input's time axis nor of size 1", option="key_shift", kind=DimMismatchError)
        return axes[0], axes[1]

    def _energy_of_key_shift(self, inputs, q: Tensor, history: Dim) -> Tensor:
        """What `key_shift` adds to the energies: each query dotted with the shift of each key position."""
        query_axis, key_axis = self._key_shift_axes()
        _, _, _, query, _, _ = self._dims()
        data = self.opts["key_shift"].output
        shift = rf.replace_dim(inputs.value(self.opts["key_shift"]), in_dim=data.feature_dim, out_dim=query)
        shift = rf.replace_dim(shift, in_dim=key_axis, out_dim=history)
        time = self.input_data.time_dim
        if query_axis.size == 1 and query_axis != time:
            shift = rf.squeeze(shift, query_axis)
        elif query_axis != time:  # the same lengths as the input's time axis (RETURNN checks the shape at runtime)
            shift = rf.replace_dim(shift, in_dim=query_axis, out_dim=time)
        return rf.matmul(q, shift, reduce=query)

    def _head_sizes(self):
        """(heads, key size per head, value size per head); each total must split evenly over the heads."""
        heads = self.opts["num_heads"]
        if heads < 1:
            raise self.error(f"'num_heads' must be positive, not {heads}", option="num_heads")
        sizes = []
        for option, total in (("total_key_dim", self.opts["total_key_dim"]), ("n_out", self.opts["n_out"])):
            if total < 1 or total % heads:
                raise self.error(f"'{option}' {total} must be a positive multiple of 'num_heads' {heads}",
                                 option=option)
            sizes.append(total // heads)
        return heads, sizes[0], sizes[1]

    def _dims(self):
        """The Dims of the projection: (qkv, heads, per head: (query, key, value) in turn, key, key of the keys,
        value)."""
        heads, key, value = self._head_sizes()
        return (self.new_dim(2 * self.opts["total_key_dim"] + self.opts["n_out"], FEATURE, f"{self.name}:qkv"),
                self.new_dim(heads, SPATIAL, f"{self.name}:heads"),
                self.new_dim(2 * key + value, FEATURE, f"{self.name}:qkv-per-head"),
                self.new_dim(key, FEATURE, f"{self.name}:query"),
                self.new_dim(key, FEATURE, f"{self.name}:key"),
                self.new_dim(value, FEATURE, f"{self.name}:value"))

    def _history_dim(self) -> Dim:
        return self.new_dim(None, SPATIAL, f"{self.name}:keys")

    def make_params(self):
        qkv = self._dims()[0]
        return {"QKV": ParamSpec((self.input_data.feature_dim, qkv), self.opts["forward_weights_init"])}

    def _project(self, inputs):
        """The input projected to queries (scaled by key size ** -0.5), keys and values, each with the heads axis."""
        qkv, heads, per_head, query, key, value = self._dims()
        x = inputs.x
        projected = rf.matmul(x, inputs.param("QKV"), reduce=x.feature_dim)
        projected = rf.split_dims(projected, axis=qkv, dims=[heads, per_head])
        # the query gets a Dim of its own: the energies reduce over the keys' key axis only
        q, k, v = rf.split(projected, axis=per_head, out_dims=[query, key, value])
        return q * (query.size ** -0.5), k, v

    def initial_step_state(self, inputs):
        if not in_loop_step(self):
            return None
        _, heads, _, _, key, value = self._dims()
        history = self._history_dim()
        rest = [d for d in self.output.dims if d != self.output.feature_dim]
        templates = {"keys": [heads, key], "values": [heads, value]}
        return {name: empty_history(self, self.output.copy(dims=rest[:1] + [history] + rest[1:] + dims),
                                    history)
                for name, dims in templates.items()}

    def emit(self, inputs):
        q, k, v = self._project(inputs)
        _, heads, _, query, key, value = self._dims()
        history = self._history_dim()
        if inputs.loop_state is None:
            time = self.input_data.time_dim
            inputs.set_size(history, inputs.run.size(time))
            k, v = (rf.replace_dim(t, in_dim=time, out_dim=history) for t in (k, v))
        else:
            state = inputs.step_state
            k = append_frame(inputs, state["keys"], k, history)
            v = append_frame(inputs, state["values"], v, history)
            inputs.set_step_state({"keys": k, "values": v})
        energy = rf.matmul(rf.replace_dim(q, in_dim=query, out_dim=key), k, reduce=key)
        if self.opts["key_shift"] is not None:
            energy = energy + self._energy_of_key_shift(inputs, q, history)
        valid = self._valid_keys(inputs, energy, history)
        if valid is not None:
            energy = rf.where(valid, energy, float("-inf"), dim_order=energy.dims)
        weights = rf.softmax(energy, axis=history, use_mask=False)
        if self.opts["attention_dropout"] and inputs.training:
            weights = rf.dropout(weights, float(self.opts["attention_dropout"]))
        out = rf.matmul(weights, v, reduce=history)
        out, _ = rf.merge_dims(out, dims=[heads, value], out_dim=self.output.feature_dim)
        return out

    def _valid_keys(self, inputs, energy: Tensor, history: Dim):
        """Bool Tensor of the keys each query may see (None: all): outside a loop within the sequence's length,
        and with `attention_left_only` up to the query's own frame. In a loop step every key so far counts."""
        if inputs.loop_state is not None:
            return None
        valid = rf.sequence_mask([history], like=energy)
        if self.opts["attention_left_only"]:
            time = self.input_data.time_dim
            left = rf.compare(rf.range_over_dim(history, like=energy), "less_equal",
                              rf.range_over_dim(time, like=energy))
            valid = left if valid is None else valid & left
        return valid
