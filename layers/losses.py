"""Loss classes: what "loss": NAME on a layer computes against its target."""

from netcompiler.layer_base import NUMBER, Option
from netcompiler.loss_base import LossBase


class CrossEntropyLoss(LossBase):
    """Cross entropy of the layer's output distribution against sparse class targets (or a dense target
    distribution), per valid frame. Options (loss_opts): `label_smoothing` (0.0), `focal_loss_factor` (0.0).
    """

    loss_class = "ce"
    options = {"label_smoothing": Option(0.0, NUMBER), "focal_loss_factor": Option(0.0, NUMBER),
               "use_fused": Option(True, (bool,))}

    def check(self):
        out, target = self.layer.output, self.target_layer.output
        if out.feature_dim is None:
            raise self.error(f"the output {out.describe()} has no feature dim with class scores")
        if target.sparse:
            if target.dim != out.dim:
                raise self.error(f"the output has {out.dim} classes but target '{self.target_layer.name}' has "
                                 f"{target.dim}", suggestion=f"set n_out={target.dim}")
        elif target.dim != out.dim:
            raise self.error(f"dense target {target.describe()} does not match the output {out.describe()}")
