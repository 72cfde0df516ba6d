"""The layer contract, the option declarations and the registry of layer classes.

A layer class declares its `layer_class` name and its `options` (each an
`Option` with default, accepted types and whether it names other layers).
Building one layer goes:

1. `check_options(d)`: unknown options, missing required ones, wrong types;
2. `transform_config_dict(d, network, get_layer)`: names in the dict become
   layer objects (by default: every option declared with `ref=...`);
3. the instance is made, and `make_output()` returns its output template:
   a pure function of its options and its inputs' templates;
4. `make_params()` returns its parameters' shapes and initializers;
5. later, `emit(ctx)` creates the TensorFlow ops (see `netcompiler/emit/`).

No TensorFlow here: steps 1-4 are pure Python.

The option declarations (`layer_options`), `ParamSpec` (`param_spec`) and the
template of concatenated sources (`concat_sources`) have modules of their own;
their names stay importable from here. Layers with sublayers (`LayerWithParts`,
`PartLayer`) build on `LayerBase`: import them from `layer_parts`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, ClassVar, Dict, List, Optional, Tuple

from .concat_sources import concat_sources_template
from .errors import (
    ConfigError, DimMismatchError, InvalidOptionError, MissingOptionError, UnknownOptionError, closest_match,
)
from .initializer_spec import parse_initializer
from .layer_options import (  # noqa: F401  (the layer families import these from here)
    COMMON_OPTIONS, IGNORED_OPTIONS, NONE_TYPE, NUMBER, REQUIRED, Option, matches_types, type_names,
)
from .limits import fits_int64, int64_error_parts, short_int
from .param_reuse import ParamReuse, reuse_references
from .param_spec import ParamSpec
from .registry import Registry
from .tensor import FEATURE, FLOAT_DTYPES, Data, Dim, resolve_dims

if TYPE_CHECKING:  # pragma: no cover
    from .network import Network

LAYER_CLASSES = Registry("layer class", "layer classes", "class")
"""Every layer class a config can name, by `layer_class`; filled as classes are defined."""


class LayerBase:
    """Base of every layer class; see the module docstring for the contract.

    Instances are built by the network builder. Attributes: `name` (full path,
    e.g. "sub/out"), `network`, `sources` (input layers), `opts` (all options
    with defaults filled in and references resolved), `output` (template),
    `params` (name -> ParamSpec).
    """

    layer_class: ClassVar[Optional[str]] = None
    options: ClassVar[Dict[str, Option]] = {}
    default_from: ClassVar[Any] = "data"
    """What "from" means when the config does not say; () for layers without inputs."""
    loss = None
    """The `LossBase` attached by the builder when the layer has a "loss" option."""
    target_layer: Optional["LayerBase"] = None
    """The layer the loss compares against."""

    def __init__(self, name: str, network: "Network", opts: Dict[str, Any]):
        self.name = name
        self.network = network
        self.opts = opts
        self.sources: List[LayerBase] = list(opts.get("from") or ())
        self.output: Data = self.make_output()
        self.output = self._apply_out_checks(self.output)
        self.params: Dict[str, ParamSpec] = self.make_params()
        self._check_reused_params()
        self._check_dropout_axis()
        self._check_emittable()

    def _check_dropout_axis(self) -> None:
        """`dropout_axis` names axes of the (concatenated) input: refused now if it does not, not in training."""
        axes = self.opts.get("dropout_axis")
        if axes is not None and self.opts.get("dropout") and self.sources:
            resolve_dims(self.input_data, axes, layer=self.name, option="dropout_axis")

    def _check_reused_params(self) -> None:
        """Each parameter taken from another layer (`reuse_params`) has there the shape this layer needs (in a
        loop body once its "prev:" templates have settled: `LoopBody.infer`)."""
        if self.network.guessing_templates:
            return
        for name, spec in self.params.items():
            source = self.param_source(name)
            if source is not None and source.param_spec(name).sizes != spec.sizes:
                raise self.error(f"'reuse_params': parameter '{name}' of layer '{source.name}' has shape "
                                 f"{list(source.param_spec(name).sizes)}, this layer needs {list(spec.sizes)}",
                                 option="reuse_params", suggestion="share only parameters of the same shape")

    def param_source(self, name: str) -> Optional["LayerBase"]:
        """The layer whose parameter `name` this layer uses (`reuse_params`), or None if it is its own."""
        reuse = self.opts.get("reuse_params")
        return reuse.source_of(name, self) if isinstance(reuse, ParamReuse) else None

    def param_spec(self, name: str) -> ParamSpec:
        """The spec of parameter `name` as its owning layer has it (following `reuse_params`)."""
        source = self.param_source(name)
        return self.params[name] if source is None else source.param_spec(name)

    def param_full_name(self, name: str) -> str:
        """The network-wide name of parameter `name` of this layer ("<scope>/W"); a shared parameter
        (`reuse_params`) has the name of the layer that owns it."""
        source = self.param_source(name)
        return f"{self.param_scope}/{name}" if source is None else source.param_full_name(name)

    def own_params(self) -> Dict[str, ParamSpec]:
        """The parameters this layer creates: `params` without those it shares from other layers."""
        return {name: spec for name, spec in self.params.items() if self.param_source(name) is None}

    def _check_emittable(self) -> None:
        """What emission could not run, refused now: sizes beyond int64, initializer names no backend knows."""
        for dim in self.output.dims:
            if isinstance(dim.size, int) and not fits_int64(dim.size):
                problem, suggestion = int64_error_parts(dim.size)
                raise self.error(f"its output dim '{dim.description}' has size {problem}", suggestion=suggestion)
        for name, spec in self.params.items():
            if not fits_int64(spec.num_elements):
                raise self.error(f"parameter '{name}' would have {short_int(spec.num_elements)} elements, more than "
                                 f"int64 can count", suggestion="use smaller sizes")
            if isinstance(spec.init, (str, dict)):
                option = next((key for key, value in self.opts.items()
                               if key.endswith("init") and value is spec.init), None)
                parse_initializer(spec.init, self.name, option)

    # --- class-level: registry and option checks -----------------------------
    def __init_subclass__(cls, register: bool = True, **kwargs):
        """Registers a class that sets `layer_class`; `register=False` keeps a class the builder makes
        itself (such as a loop body's "prev:" placeholder) out of what a config can name."""
        super().__init_subclass__(**kwargs)
        if register and cls.__dict__.get("layer_class"):
            LAYER_CLASSES.register(cls.layer_class, cls)

    @classmethod
    def all_options(cls) -> Dict[str, Option]:
        """Common options, then those of each base class, then this class's (later win). Shared: do not mutate."""
        cached = cls.__dict__.get("_all_options")
        if cached is None:
            cached = dict(COMMON_OPTIONS)
            for klass in reversed(cls.__mro__):
                cached.update(klass.__dict__.get("options", {}))
            cached["from"] = Option(cls.default_from, COMMON_OPTIONS["from"].types, ref="layers")
            cls._all_options = cached
        return cached

    @classmethod
    def check_options(cls, d: Dict[str, Any], layer: str) -> Tuple[Dict[str, Any], List[str]]:
        """Validates the raw dict; returns (options with defaults filled in, notices)."""
        declared = cls.all_options()
        notices = []
        for key in d:
            if key in declared:
                continue
            if key in IGNORED_OPTIONS:
                notices.append(f"layer '{layer}': option '{key}' has no effect in netcompiler; ignored")
                continue
            if key == "batch_norm":  # RETURNN's common option; here an option of linear and softmax only
                raise InvalidOptionError(
                    f"option 'batch_norm' (RETURNN normalises any layer's output) is supported by netcompiler on "
                    f"'linear' and 'softmax' only, not on class '{cls.layer_class}'", layer=layer, option=key,
                    suggestion="add a 'batch_norm' layer that reads this one")
            guess = closest_match(key, declared)
            raise UnknownOptionError(
                f"option '{key}' unknown for class '{cls.layer_class}'",
                layer=layer, option=key,
                suggestion=f"did you mean '{guess}'?" if guess else
                f"options of '{cls.layer_class}': {', '.join(sorted(k for k in declared if k != 'class'))}",
            )
        opts: Dict[str, Any] = {}
        for key, option in declared.items():
            if key in d:
                value = d[key]
            elif option.required:
                raise MissingOptionError(
                    f"class '{cls.layer_class}' needs option '{key}'"
                    + (f" ({option.doc})" if option.doc else ""),
                    layer=layer, option=key,
                )
            else:
                value = option.default
            if key in d:
                cls._check_value(layer, key, option, value)
            opts[key] = value
        if opts["dropout_axis"] is not None and opts["dropout_noise_shape"]:
            raise InvalidOptionError("options 'dropout_axis' and 'dropout_noise_shape' both say where the dropout "
                                     "mask is shared", layer=layer, option="dropout_axis",
                                     suggestion="give only one of them (as RETURNN requires)")
        return opts, notices

    @classmethod
    def _check_value(cls, layer: str, key: str, option: Option, value: Any) -> None:
        if not matches_types(value, option.types):
            raise InvalidOptionError(
                f"option '{key}' must be {type_names(option.types)}, not {type(value).__name__} {value!r}",
                layer=layer, option=key,
            )
        if option.choices and value not in option.choices:
            guess = closest_match(str(value), [str(c) for c in option.choices])
            raise InvalidOptionError(
                f"option '{key}' is {value!r}, expected one of {', '.join(repr(c) for c in option.choices)}",
                layer=layer, option=key, suggestion=f"did you mean {guess!r}?" if guess else None,
            )
        if option.rate and value is not None and not 0 <= value < 1:
            raise InvalidOptionError(
                f"option '{key}' must be a rate in [0, 1), not {value!r}", layer=layer, option=key,
                suggestion=f"a rate is the fraction dropped: e.g. '{key}': 0.1 drops 10%; 0 (the default) none")

    @classmethod
    def transform_config_dict(cls, opts: Dict[str, Any], network: "Network",
                              get_layer: Callable[[str, str], "LayerBase"]) -> Dict[str, Any]:
        """Replaces layer names by layer objects, for every option declared with `ref`.

        `get_layer(name, option)` returns the layer, or raises an error naming the option.
        Override for options whose references need more than that.
        """
        for key, option in cls.all_options().items():
            value = opts.get(key)
            if option.ref is None or value is None:
                continue
            if option.ref == "layers":
                names = [value] if isinstance(value, str) else list(value)
                opts[key] = [get_layer(n, key) for n in names]
            elif option.ref == "layer":
                opts[key] = get_layer(value, key)
            elif option.ref == "layer_or_value" and isinstance(value, str):
                opts[key] = get_layer(value, key)
            elif option.ref == "layer_dict" and isinstance(value, dict):
                opts[key] = {k: get_layer(v, key) if isinstance(v, str) else v for k, v in value.items()}
        if opts.get("reuse_params") is not None:
            opts["reuse_params"] = ParamReuse.resolve(opts["reuse_params"], get_layer, None)
        return opts

    @classmethod
    def loop_seed(cls, loop: Any, name: str, d: Dict[str, Any]) -> Optional[Data]:
        """The first guess for "prev:<name>" in a rec unit (`loop`: its `name` and `network`), for a layer of this
        class written as `d`,
        where the class knows it better than the generic guess (from 'n_out'/'out_type', else its first
        input); None: the generic guess."""
        return None

    @classmethod
    def referenced_names(cls, d: Dict[str, Any]) -> List[Tuple[str, str]]:
        """(option, layer name) pairs the raw dict refers to; used to order the build."""
        found = []
        for key, option in cls.all_options().items():
            value = d.get(key, option.default if key == "from" else None)
            if option.ref in ("layers",) and value is not None:
                names = [value] if isinstance(value, str) else list(value) if isinstance(value, (list, tuple)) else []
                for n in names:
                    if isinstance(n, str):
                        found.append((key, n))
            elif option.ref in ("layer", "layer_or_value") and isinstance(value, str):
                found.append((key, value))
            elif option.ref == "layer_dict" and isinstance(value, dict):
                found += [(key, v) for v in value.values() if isinstance(v, str)]
        found += [("reuse_params", name) for name in reuse_references(d.get("reuse_params"), None)]
        return found

    # --- instance-level: the contract ----------------------------------------
    def make_output(self) -> Data:
        """The output template. Default: the (concatenated) input's template."""
        return self.input_data.copy(name=self.name)

    def make_params(self) -> Dict[str, ParamSpec]:
        """Parameters of this layer by name. Default: none."""
        return {}

    def emit(self, ctx) -> Any:  # pragma: no cover - each emitting class overrides
        """Creates the TF ops; returns a tensor laid out as `self.output`."""
        raise NotImplementedError(f"layer class '{self.layer_class}' has no TensorFlow emission yet")

    def initial_step_state(self, inputs) -> Any:
        """In a loop body: the state this layer carries from step to step at the first step (a nest of Tensors,
        made in the context around the loop), or None (the default) if it carries none. A layer that overrides
        this reads `inputs.step_state` and calls `inputs.set_step_state` in its `emit`; it depends on the step."""
        return None


    def get_sub_layer(self, name: str) -> Optional["LayerBase"]:
        """The sublayer `name` (as in "self/name"), or None if there is none."""
        return None

    def sub_layer_names(self) -> List[str]:
        return []

    def makes_batch_axis(self) -> bool:
        """Whether the output has a batch axis that no input gives (the batch size must come from the extern
        data the network reads)."""
        return False

    def dependencies(self) -> List["LayerBase"]:
        """Every layer this one reads: its sources, then layers named by other options (also as the values of a
        dict of layers, `ref="layer_dict"`)."""
        deps: List[LayerBase] = []
        for value in self.opts.values():
            items = value if isinstance(value, (list, tuple)) else \
                value.values() if isinstance(value, dict) else [value]
            for item in items:
                if isinstance(item, LayerBase) and item not in deps:
                    deps.append(item)
        return deps

    @property
    def behavior_version(self) -> int:
        """The config's `behavior_version` (0 without one, as in RETURNN): some layers' defaults depend on it."""
        config = self.network.config
        value = config.get("behavior_version") if config is not None else None
        if value is None:
            return 0
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self.error(f"config key 'behavior_version' must be a non-negative int, not {value!r}",
                             suggestion="e.g. behavior_version = 12")
        return value

    @property
    def param_scope(self) -> str:
        """What this layer's parameter names start with ("<scope>/W"): its path, except that a layer in a rec
        unit is "<rec>/rec/<inner>", as RETURNN's checkpoints name it; `name_scope` replaces the layer's own name
        (RETURNN's meaning: "x" -> "<network's scope>/x", "/x" -> "x" at the top)."""
        network = self.network
        scope = self.opts.get("name_scope")
        if scope is not None:
            if not scope.strip("/"):
                raise self.error(f"'name_scope' {scope!r} (the parameters directly in the network's scope) is not "
                                 f"supported by netcompiler yet", option="name_scope",
                                 suggestion="give a scope name, e.g. 'shared'")
            return scope.strip("/") if scope.startswith("/") else f"{network.param_prefix}{scope.rstrip('/')}"
        local = self.name[len(network.prefix):] if network.prefix and self.name.startswith(network.prefix) \
            else self.name
        return f"{network.param_prefix}{local}"

    # --- helpers for subclasses ---------------------------------------------
    @property
    def input_data(self) -> Data:
        """The template of the input: the single source, or all sources concatenated on the feature dim."""
        return concat_sources_template(self.sources, self.name)

    def error(self, message: str, option: Optional[str] = None, suggestion: Optional[str] = None,
              kind: type = InvalidOptionError) -> ConfigError:
        """An error about this layer, to raise."""
        return kind(message, layer=self.name, option=option, suggestion=suggestion)

    def projected_output(self, out_dim: Dim, **changes) -> Data:
        """The input's template with its feature dim replaced by `out_dim` (a weight matrix maps one to the
        other); a sparse input gets `out_dim` appended (its indices select rows of the weights)."""
        x = self.input_data
        if x.sparse:
            return x.copy(name=self.name, dims=x.dims + (out_dim,), dtype="float32", sparse_dim=None,
                          feature_dim=out_dim, **changes)
        if x.feature_dim is None:
            raise self.error(f"the input {x.describe()} has no feature dim to transform", option="from")
        if x.feature_dim.size is None:
            raise self.error(f"the input's feature dim {x.feature_dim.short_repr()} is dynamic; "
                             f"a weight matrix needs a static size", option="from")
        if x.dtype not in FLOAT_DTYPES:
            raise self.error(f"the input {x.describe()} has dtype {x.dtype}; '{self.layer_class}' needs floats "
                             f"(or sparse indices)", option="from", suggestion="add a 'cast' layer")
        return x.copy_replace_dim(x.feature_dim, out_dim, name=self.name, **changes)

    def projected_in_dim(self) -> Dim:
        """The input dim a weight matrix of `projected_output` maps from: the classes of a sparse input, else
        the feature dim."""
        x = self.input_data
        return x.sparse_dim if x.sparse else x.feature_dim

    def new_dim(self, size: Optional[int], kind: str, description: str) -> Dim:
        """A Dim this layer's template (or parameters) introduces, e.g. `self.new_dim(1, SPATIAL, f"{self.name}:time")`.

        The network remembers it (see `Network.layer_dim`), so inferring this layer again returns the very
        same Dim object; layer code must create its new Dims through here, never by calling `Dim(...)`.
        """
        return self.network.layer_dim(self.name, size, kind, description)

    def new_feature_dim(self, size: int, description: Optional[str] = None) -> Dim:
        """A new feature dim of this layer, named '<layer>:feature' (remembered, see `new_dim`)."""
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise self.error(f"'n_out' must be a positive int, not {size!r}", option="n_out")
        return self.new_dim(size, FEATURE, description or f"{self.name}:feature")

    def _apply_out_checks(self, out: Data) -> Data:
        n_out = self.opts.get("n_out")
        if n_out is not None and "n_out" not in type(self).options and out.dim != n_out:
            raise self.error(
                f"'n_out' is {n_out}, but the output's feature dim is {out.dim} ({out.describe()})",
                option="n_out", suggestion="remove 'n_out' or make it match",
            )
        out_type = self.opts.get("out_type")
        if out_type:
            for key, expected in out_type.items():
                actual = getattr(out, key, None) if key in _OUT_TYPE_FIELDS else None
                if key not in _OUT_TYPE_FIELDS:
                    raise self.error(f"'out_type' key '{key}' is not supported", option="out_type",
                                     suggestion=f"supported: {', '.join(sorted(_OUT_TYPE_FIELDS))}")
                if key == "shape":
                    if not isinstance(expected, (list, tuple)):
                        raise self.error(f"'out_type' shape must be a tuple, not {expected!r}", option="out_type")
                    expected = tuple(expected)
                if actual != expected:
                    raise self.error(f"'out_type' says {key}={expected!r}, but the output has {actual!r} "
                                     f"({out.describe()})", option="out_type", kind=DimMismatchError)
        return out

    def __repr__(self):
        return f"<{type(self).__name__} {self.name!r} {self.output.describe()}>"



_OUT_TYPE_FIELDS = {"dim", "shape", "dtype", "sparse", "batch_dim_axis", "time_dim_axis", "feature_dim_axis"}


def get_layer_class(name: str, layer: str) -> type:
    """The registered class for `name` (the "class" of layer `layer`); a clear error if there is none."""
    if not isinstance(name, str):
        raise InvalidOptionError(f"'class' must be a string, not {type(name).__name__}", layer=layer, option="class")
    return LAYER_CLASSES.get(name, layer)


def registered_layer_classes() -> Dict[str, type]:
    """All registered layer classes by `layer_class` name (what is registered now: see `netcompiler.builtin`)."""
    return LAYER_CLASSES.classes()


def has_step_state(layer: LayerBase) -> bool:
    """Whether `layer`'s class may carry a state from step to step in a loop body."""
    return type(layer).initial_step_state is not LayerBase.initial_step_state

