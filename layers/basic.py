"""Layers that pass their input through: copy, dropout, scaled_grad, activation."""

from netcompiler.layer_base import NUMBER, LayerBase, Option
from netcompiler.lazy_tf import tf

from .activations import FEATURE_WISE, apply_activation, check_activation


class CopyLayer(LayerBase):
    """Its input unchanged; several inputs are concatenated on the feature dim.

    Options: the common ones (`dropout` applies to the input, as everywhere).
    """

    layer_class = "copy"

    def emit(self, ctx):
        return ctx.input(self)


class DropoutLayer(CopyLayer):
    """Like copy; exists so that configs can say "dropout" where they mean it. Option: `dropout` (rate)."""

    layer_class = "dropout"


class ScaledGradientLayer(LayerBase):
    """Identity forward; the gradient is multiplied by `scale` (0: no gradient, -1: gradient reversal).

    Options: `scale` (float, required).
    """

    layer_class = "scaled_grad"
    options = {"scale": Option(types=NUMBER, doc="gradient factor")}

    def emit(self, ctx):
        x = ctx.input(self)
        scale = float(self.opts["scale"])
        if scale == 0:
            return tf.stop_gradient(x)
        # x*scale + stop_gradient(x*(1-scale)) has the value x and the gradient scale.
        return x * scale + tf.stop_gradient(x * (1.0 - scale))


class ActivationLayer(LayerBase):
    """Applies an activation function elementwise (softmax/log_softmax over the feature dim).

    Options: `activation` (str, e.g. "relu", "tanh", or a chain "exp+log").
    """

    layer_class = "activation"
    options = {"activation": Option(types=(str,), doc='e.g. "relu"')}

    def make_output(self):
        check_activation(self.opts["activation"], self.name)
        x = self.input_data
        if set(self.opts["activation"].split("+")) & FEATURE_WISE and x.feature_dim is None:
            raise self.error(f"'{self.opts['activation']}' normalises over the feature dim, but the input "
                             f"{x.describe()} has none", option="activation")
        if x.sparse:
            raise self.error(f"the input {x.describe()} is sparse (class indices); activations need values",
                             option="from", suggestion="embed the indices first, e.g. with a 'linear' layer")
        return x.copy(name=self.name)

    def emit(self, ctx):
        x = ctx.input(self)
        return ctx.apply_feature_wise(self.output, x, lambda t: apply_activation(self.opts["activation"], t))
