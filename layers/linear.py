"""Fully connected layers: linear, softmax."""

from netcompiler.errors import DimMismatchError
from netcompiler.layer_base import NONE_TYPE, LayerBase, MissingOptionError, Option, ParamSpec
from netcompiler import frontend as rf
from netcompiler.tensor import FEATURE, Dim

from .activations import activate, check_activation
from .norm import OutputBatchNorm


class LinearLayer(LayerBase):
    """`activation(x W + b)` on the feature dim of the input; a sparse input is embedded (row lookup in W).

    Options: `n_out` or `out_dim` (output feature size or Dim), `activation` (None), `with_bias` (True),
    `forward_weights_init` ("glorot_uniform"), `bias_init` (0.0), `use_transposed_weights` (False:
    W is [in, out]; True: [out, in]), `grad_filter` (None; a positive number: as in RETURNN, backward the
    gradient of x W + b (before the activation) is dropped for each sequence whose largest squared entry
    reaches it; `rf.filtered_gradient`), `batch_norm` (False; True or a dict of batch_norm layer options: as
    RETURNN's common option, the output after the activation is batch-normalised, with the parameters
    "batch_norm/..." of this layer; see `OutputBatchNorm`). Departure: RETURNN accepts `batch_norm` on every
    layer; netcompiler on linear and softmax, and not with the softmax activation (the loss reads the logits).
    """

    layer_class = "linear"
    options = {
        "n_out": Option(None, (int, NONE_TYPE), doc="output feature size"),
        "out_dim": Option(None, (Dim, NONE_TYPE), doc="output feature dim"),
        "activation": Option(None, (str, NONE_TYPE)),
        "with_bias": Option(True, (bool,)),
        "forward_weights_init": Option("glorot_uniform", (str, float, int, dict)),
        "bias_init": Option(0.0, (str, float, int, dict)),
        "use_transposed_weights": Option(False, (bool,)),
        "grad_filter": Option(None, (int, float, NONE_TYPE),
                              doc="drop a sequence's gradient before the activation where max(grad**2) >= this"),
        "batch_norm": Option(False, (bool, dict), doc="batch-normalise the output (True or batch_norm options)"),
    }

    def make_output(self):
        check_activation(self.opts["activation"], self.name)
        grad_filter = self.opts["grad_filter"]
        if grad_filter is not None and not grad_filter > 0:
            raise self.error(f"'grad_filter' must be a positive threshold (of the squared gradient), not "
                             f"{grad_filter!r}", option="grad_filter", suggestion="e.g. 1.0, or leave it out")
        if self.opts["batch_norm"] is not False and self.opts["activation"] in ("softmax", "log_softmax"):
            raise self.error(f"'batch_norm' on the output of the activation '{self.opts['activation']}' is not "
                             f"supported: the loss reads the logits before it", option="batch_norm",
                             suggestion="put a 'batch_norm' layer before the softmax instead")
        return self.projected_output(self.out_dim())

    def output_batch_norm(self):
        """The `batch_norm` option's normalisation of the output, or None without it."""
        if self.opts["batch_norm"] is False:
            return None
        if "_output_batch_norm" not in self.__dict__:
            self._output_batch_norm = OutputBatchNorm(self, self.opts["batch_norm"])
        return self._output_batch_norm

    def out_dim(self) -> Dim:
        given = self.opts["out_dim"]
        n_out = self.opts["n_out"]
        if given is not None:
            if given.size is None:
                raise self.error(f"'out_dim' {given.short_repr()} is dynamic; a weight matrix needs a static size",
                                 option="out_dim")
            x = self.input_data
            if x.has_dim(given) and given != x.feature_dim:
                raise self.error(f"'out_dim' {given.short_repr()} is already a dim of the input {x.describe()}",
                                 option="out_dim", kind=DimMismatchError)
            if n_out is not None and n_out != given.size:
                raise self.error(f"'n_out' {n_out} disagrees with 'out_dim' {given.short_repr()}", option="n_out")
            return given
        if n_out is None:
            raise MissingOptionError(f"class '{self.layer_class}' needs option 'n_out' (the output feature size)",
                                     layer=self.name, option="n_out")
        return self.new_feature_dim(n_out)

    def weight_in_dim(self) -> Dim:
        """The weights' input dim: the input's feature (or class) dim, or a Dim of its own of the same size where
        that is the output's feature dim too (a layer that maps a dim onto itself, e.g. from its own 'prev:')."""
        in_dim = self.projected_in_dim()
        if in_dim == self.output.feature_dim:
            return self.new_dim(in_dim.size, FEATURE, f"{self.name}:in")
        return in_dim

    def make_params(self):
        in_dim, out_dim = self.weight_in_dim(), self.output.feature_dim
        shape = (out_dim, in_dim) if self.opts["use_transposed_weights"] else (in_dim, out_dim)
        params = {"W": ParamSpec(shape, self.opts["forward_weights_init"])}
        if self.opts["with_bias"]:
            params["b"] = ParamSpec((out_dim,), self.opts["bias_init"])
        if self.output_batch_norm() is not None:
            params.update(self.output_batch_norm().params)
        return params

    def emit(self, inputs):
        x = inputs.x
        weights = inputs.param("W")
        in_dim = self.weight_in_dim()
        if in_dim != self.projected_in_dim():
            x = rf.replace_dim(x, in_dim=self.projected_in_dim(), out_dim=in_dim) if x.sparse_dim is None \
                else x.copy(sparse_dim=in_dim)
        bias = inputs.param("b") if self.opts["with_bias"] else None
        if x.sparse_dim is not None:
            y = rf.gather(weights, indices=x, axis=in_dim)
            y = y if bias is None else y + bias
        else:
            y = rf.matmul(x, weights, reduce=in_dim, bias=bias)
        y = rf.permute(y, self.output.dims).with_data(self.output)
        if self.opts["grad_filter"] is not None:
            y = rf.filtered_gradient(y, self.opts["grad_filter"], per=[d for d in y.dims if d.is_batch])
        activation = self.opts["activation"]
        if activation == "softmax":
            inputs.record_logits(y)
            if inputs.logits_suffice and self.output_batch_norm() is None:
                return y  # only its loss reads it, from the logits: no probabilities (an eager step's saving)
        y = activate(y, activation)
        return y if self.output_batch_norm() is None else self.output_batch_norm().apply(inputs, y)


class SoftmaxLayer(LinearLayer):
    """A linear layer with `activation="softmax"` by default (the usual classifier output)."""

    layer_class = "softmax"
    options = {"activation": Option("softmax", (str, NONE_TYPE))}
