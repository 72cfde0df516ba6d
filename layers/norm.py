"""Normalisation layers: layer_norm, norm (over any axes), batch_norm (with running statistics).

All three keep the input's template; they differ in their parameters.
"""

from typing import Dict, List, Optional

from netcompiler import frontend as rf
from netcompiler.frontend.normalization import fused_layer_norm
from netcompiler.layer_base import NONE_TYPE, NUMBER, LayerBase, Option, ParamSpec
from netcompiler.tensor import SPATIAL, Data, Dim, resolve_dims

from .reduce import AXES_OR_AXIS, axes_option, check_values

_INIT = (str, float, int, dict)


class _NormBase(LayerBase):
    """Shared checks: float values in, the same template out; `epsilon` must not be negative."""

    def make_output(self):
        x = self.input_data
        check_values(self, x, need_float=True)
        epsilon = self.opts["epsilon"]
        if not epsilon >= 0:
            raise self.error(f"'epsilon' must be >= 0, not {epsilon!r}", option="epsilon",
                             suggestion="e.g. 'epsilon': 1e-6, a small positive number")
        self.check_input(x)
        return x.copy(name=self.name)

    def check_input(self, x: Data) -> None:
        """Further checks of the input by each class."""

    def param_or_none(self, inputs, name: str) -> Optional[rf.Tensor]:
        return inputs.param(name) if name in self.params else None

    def normalized(self, x: rf.Tensor, mean: rf.Tensor, variance: rf.Tensor, scale: Optional[rf.Tensor],
                   shift: Optional[rf.Tensor]) -> rf.Tensor:
        """`(x - mean) / sqrt(variance + epsilon) * scale + shift`, computed as `x * a - b` with the small factors
        `a = scale / sqrt(variance + epsilon)` and `b = mean * a - shift` (as TF's batch_normalization); the
        statistics and parameters broadcast against `x` by their dims."""
        factor = rf.rsqrt(variance + float(self.opts["epsilon"]))
        if scale is not None:
            factor = factor * scale
        offset = mean * factor
        if shift is not None:
            offset = offset - shift
        return x * factor - offset

    def static_feature_dim(self, x: Data) -> Dim:
        if x.feature_dim is None or x.feature_dim.size is None:
            what = "no feature dim" if x.feature_dim is None else "a dynamic feature dim"
            raise self.error(f"the input {x.describe()} has {what}; the parameters need a static one",
                             option="from", suggestion="give an input with a static feature dim, e.g. the output "
                                                       "of a 'linear' layer with 'n_out'")
        return x.feature_dim


class LayerNormLayer(_NormBase):
    """Layer normalisation over the feature dim: `(x - mean) / sqrt(var + epsilon) * scale + bias`.

    Options: `epsilon` (1e-6). Params (RETURNN's names): "scale" [F] (init 1) and "bias" [F] (init 0).
    """

    layer_class = "layer_norm"
    options = {"epsilon": Option(1e-6, NUMBER)}

    def check_input(self, x):
        self.static_feature_dim(x)

    def make_params(self):
        feature = self.output.feature_dim
        return {"scale": ParamSpec((feature,), 1.0), "bias": ParamSpec((feature,), 0.0)}

    def emit(self, inputs):
        x = inputs.x
        fused = fused_layer_norm(x, in_dim=x.feature_dim, scale=inputs.param("scale"), bias=inputs.param("bias"),
                                 eps=float(self.opts["epsilon"]))  # the backend's one kernel, where it has one
        if fused is not None:
            return fused
        mean, variance = rf.moments(x, axis=x.feature_dim)
        return self.normalized(x, mean, variance, inputs.param("scale"), inputs.param("bias"))


class NormLayer(_NormBase):
    """Normalises over `axes` (mean and variance of the input over them), then `* scale + bias`.

    Options: `axes` or `axis` (one of them, as in RETURNN; e.g. "F", "TF", "except_batch"), `param_shape` ("F":
    axes of the input that the scale and bias have; static, not batch), `scale` (True), `bias` (True), `epsilon`
    (1e-6).
    Params: "scale" (init 1) and "bias" (init 0), shaped by the `param_shape` axes in the input's order
    (an empty list gives scalars).
    Decision: padded frames do not count in the statistics when a dynamic axis (or the batch axis) is among
    `axes` (RETURNN does not mask here).
    """

    layer_class = "norm"
    options = {
        **AXES_OR_AXIS,
        "param_shape": Option("F", (str, int, list, tuple, Dim)),
        "scale": Option(True, (bool,)),
        "bias": Option(True, (bool,)),
        "epsilon": Option(1e-6, NUMBER),
    }

    def check_input(self, x):
        if not self.norm_dims(x):
            option, desc = axes_option(self)
            raise self.error(f"'{option}' {desc!r} names no axis of the input {x.describe()}", option=option,
                             suggestion=f"name the axes to normalize over, e.g. '{option}': 'F' or ['T', 'F']")
        self.param_dims(x)

    def norm_dims(self, x: Data) -> List[Dim]:
        option, desc = axes_option(self)
        return resolve_dims(x, desc, layer=self.name, option=option)

    def param_dims(self, x: Data) -> List[Dim]:
        named = resolve_dims(x, self.opts["param_shape"], layer=self.name, option="param_shape")
        for dim in named:
            if dim.is_batch or dim.is_dynamic:
                raise self.error(f"'param_shape' names the axis {x.dim_label(dim)} of the input {x.describe()}, "
                                 f"but parameters need static, non-batch axes", option="param_shape",
                                 suggestion="name static axes only, e.g. 'param_shape': 'F'")
        return [d for d in x.dims if d in named]

    def make_params(self):
        shape = tuple(self.param_dims(self.output))
        params = {}
        if self.opts["scale"]:
            params["scale"] = ParamSpec(shape, 1.0)
        if self.opts["bias"]:
            params["bias"] = ParamSpec(shape, 0.0)
        return params

    def emit(self, inputs):
        mean, variance = rf.moments(inputs.x, axis=self.norm_dims(self.input_data))  # over the valid frames
        return self.normalized(inputs.x, mean, variance, self.param_or_none(inputs, "scale"),
                               self.param_or_none(inputs, "bias"))


class BatchNormLayer(_NormBase):
    """Batch normalisation over all axes but the feature axis, with running mean and variance for inference.

    Options (None: RETURNN's default for the config's `behavior_version`, the first value from version 12 on, the
    second below): `use_shift` (True: param "beta"), `use_std` (True: param "gamma"), `use_sample` (0.0: in
    training, the weight of the running statistics against the batch's), `force_sample` (False: also use
    `use_sample` in eval), `momentum` (0.1 / 0.99: the running averages move this far towards the batch statistics
    each step), `epsilon` (1e-3), `update_sample_only_in_training` (True / False), `delay_sample_update`
    (True / False), `param_version` (2 / 0; 0, 1 or 2), `gamma_init` (1.0), `beta_init` (0.0), `masked_time`
    (True: padded frames do not count; RETURNN wants it given from version 12 on, here it defaults to True).

    Params, RETURNN's checkpoint names "<layer>/batch_norm/<prefix><name>", the prefix by `param_version`
    ("<layer>_<layer>_output_" for 0, none for 1, "v2_" for 2): "mean" (init 0) and "variance" (init 1) are the
    running statistics, not trainable; "gamma" (scale, init `gamma_init`) and "beta" (shift, init `beta_init`)
    are trainable. Their shape is [F] for param_version 2, else RETURNN's broadcast shape: the input's axes in
    order, each other than F of size 1 (e.g. [1, 1, F]).
    Emission (as RETURNN's LayerBase.batch_norm): the batch statistics are the mean and (population) variance
    over all axes but the feature axis, over valid frames only if `masked_time` (else padded frames count, as in
    RETURNN). Training (or `force_sample`) normalises with `(1 - use_sample) * batch + use_sample * running`
    statistics, eval with the running ones. The running statistics move `momentum` towards the batch's in
    training (and also in eval if not `update_sample_only_in_training`), by an assign after the output's
    statistics were read (`delay_sample_update`) or before. Output `(x - mean) / sqrt(var + epsilon) * gamma + beta`.
    """

    layer_class = "batch_norm"
    options = {
        "use_shift": Option(True, (bool,)),
        "use_std": Option(True, (bool,)),
        "use_sample": Option(0.0, NUMBER),
        "force_sample": Option(False, (bool,)),
        "momentum": Option(None, NUMBER + (NONE_TYPE,)),
        "epsilon": Option(1e-3, NUMBER),
        "update_sample_only_in_training": Option(None, (bool, NONE_TYPE)),
        "delay_sample_update": Option(None, (bool, NONE_TYPE)),
        "param_version": Option(None, (int, NONE_TYPE), choices=(None, 0, 1, 2)),
        "gamma_init": Option(1.0, _INIT),
        "beta_init": Option(0.0, _INIT),
        "masked_time": Option(True, (bool,)),
    }

    # RETURNN's defaults that depend on behavior_version: (from version 12 on, below)
    VERSION_DEFAULTS = {"momentum": (0.1, 0.99), "update_sample_only_in_training": (True, False),
                        "delay_sample_update": (True, False), "param_version": (2, 0)}

    def setting(self, option: str):
        """The option's value, or its default for the config's behavior_version."""
        value = self.opts[option]
        if value is None and option in self.VERSION_DEFAULTS:
            new, old = self.VERSION_DEFAULTS[option]
            return new if self.behavior_version >= 12 else old
        return value

    def check_input(self, x):
        self.static_feature_dim(x)
        for option in ("use_sample", "momentum"):
            value = self.setting(option)
            if not 0 <= value <= 1:
                raise self.error(f"'{option}' must be between 0 and 1, not {value!r}", option=option,
                                 suggestion=f"e.g. '{option}': " + {"use_sample": "0.0", "momentum": "0.1"}[option])

    def param_name(self, name: str) -> str:
        """RETURNN's name of the parameter `name` ("mean", "variance", "gamma", "beta") within the layer."""
        version = self.setting("param_version")
        local = self.name.rsplit("/", 1)[-1]  # the layer's own name (RETURNN's, also with a name_scope)
        prefix = {0: f"{local}_{local}_output_", 1: "", 2: "v2_"}[version]
        return f"batch_norm/{prefix}{name}"

    def broadcast_dims(self) -> List[Dim]:
        """The size-1 axes of the parameters below param_version 2 (RETURNN's broadcast shape), else none."""
        if self.setting("param_version") >= 2:
            return []
        x = self.output
        return [self.new_dim(1, SPATIAL, f"{self.name}:batch_norm_broadcast{i}") for i, d in enumerate(x.dims)
                if d != x.feature_dim]

    def make_params(self) -> Dict[str, ParamSpec]:
        x, broadcast = self.output, self.broadcast_dims()
        ones = iter(broadcast)
        shape = tuple(d if d == x.feature_dim else next(ones) for d in x.dims) if broadcast else (x.feature_dim,)
        params = {self.param_name("mean"): ParamSpec(shape, 0.0, trainable=False),
                  self.param_name("variance"): ParamSpec(shape, 1.0, trainable=False)}
        if self.opts["use_std"]:
            params[self.param_name("gamma")] = ParamSpec(shape, self.opts["gamma_init"])
        if self.opts["use_shift"]:
            params[self.param_name("beta")] = ParamSpec(shape, self.opts["beta_init"])
        return params

    def stat_param(self, inputs, name: str) -> Optional[rf.Tensor]:
        """The parameter `name` as [F] (without RETURNN's size-1 axes), or None if there is none."""
        param = self.param_or_none(inputs, self.param_name(name))
        return None if param is None else self.as_stat(param)

    def as_stat(self, param: rf.Tensor) -> rf.Tensor:
        """A parameter value as [F]: without the size-1 axes of param_version < 2."""
        broadcast = self.broadcast_dims()
        return rf.squeeze(param, broadcast) if broadcast else param

    def emit(self, inputs):
        x = inputs.x
        mean, variance = self.statistics_to_use(inputs, x)
        return self.normalized(x, mean, variance, self.stat_param(inputs, "gamma"), self.stat_param(inputs, "beta"))

    def statistics_to_use(self, inputs, x: rf.Tensor):
        """[mean, variance] ([F] each) to normalise with; updates the running statistics where due."""
        opts = self.opts
        use_sample = float(opts["use_sample"])
        update = inputs.training or not self.setting("update_sample_only_in_training")
        use_batch = (inputs.training or opts["force_sample"]) and use_sample != 1
        variables = [inputs.param(self.param_name(name)) for name in ("mean", "variance")]
        running = [self.as_stat(var) for var in variables]
        if not (update or use_batch):
            return running
        others = [d for d in x.dims if d != x.feature_dim]
        batch = rf.moments(x, axis=others, use_mask=opts["masked_time"])
        stats = running
        if update:
            # read the running statistics before the update changes them (they have no gradient anyway)
            stats = [rf.stop_gradient(v) for v in running]
            updates = [rf.parameter_assign(var, self.param_shaped((rf.stop_gradient(new) - old) *
                                                                  float(self.setting("momentum"))), op="add")
                       for var, old, new in zip(variables, stats, batch)]
            if not self.setting("delay_sample_update"):
                stats = [self.as_stat(rf.with_dependencies(v, updates)) for v in variables]  # read after the update
        if not use_batch:
            return stats
        return [(1.0 - use_sample) * new + use_sample * old if use_sample else new for old, new in zip(stats, batch)]

    def param_shaped(self, value: rf.Tensor) -> rf.Tensor:
        """A [F] value with the parameters' size-1 axes (below param_version 2)."""
        for dim in self.broadcast_dims():
            value = rf.expand_dim(value, dim)
        return value


class OutputBatchNorm(BatchNormLayer, register=False):
    """RETURNN's `batch_norm` layer option: batch normalisation of a layer's own output (after its activation),
    with the options, parameters and parameter names of the batch_norm layer, the parameters being the host
    layer's ("<layer>/batch_norm/..."). `options`: True (the defaults) or a dict of batch_norm layer options.
    Made by the host (see LinearLayer); `make_params` gives the host's extra parameters, `apply` the output."""

    def __init__(self, host: LayerBase, options):
        self.name, self.network, self.sources = host.name, host.network, []
        self.output = host.output
        given = options if isinstance(options, dict) else {}
        declared = BatchNormLayer.options
        for key, value in given.items():
            if key not in declared:
                raise host.error(f"'batch_norm' has an unknown key {key!r}", option="batch_norm",
                                 suggestion=f"the options of the batch_norm layer: {', '.join(sorted(declared))}")
            self._check_value(host.name, "batch_norm", declared[key], value)
        self.opts = {key: given.get(key, option.default) for key, option in declared.items()}
        self.check_input(self.output)
        self.params = self.make_params()

    def apply(self, inputs, y: rf.Tensor) -> rf.Tensor:
        """The host's output `y` normalised (and the running statistics updated where due)."""
        mean, variance = self.statistics_to_use(inputs, y)
        return self.normalized(y, mean, variance, self.stat_param(inputs, "gamma"), self.stat_param(inputs, "beta"))
