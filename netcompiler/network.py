"""The network builder: a `network` dict in, layers with inferred templates out.

Building goes: find the layers that are needed (the "output" layer, layers
with a loss, layers marked `is_output_layer`, and what they depend on), order
them by dependency (reporting a cycle with its path), then construct each
layer in order: check its options, resolve its references, infer its output
template and parameters. Nested networks (subnetworks, loop bodies) are
`Network`s with a parent; "base:x" looks the name up in the parent.

References ("x", "x/y", "data", "data:KEY", "base:x", "prev:x", ":i") are
parsed by `netcompiler.references`; "prev:x" and ":i" only resolve in a loop
body (`netcompiler.loop_body.LoopBody`), which overrides `get_prev_layer` and
`step_index_layer`.

Beside it: the dependency walk (`dependency_order`), the first check of the
dict's integers and layer names (`network_integers.check_integers`), and the
recursion room for deeply nested networks (`network_nesting`); their names stay
importable from here.
"""

from __future__ import annotations

from typing import Any, Dict, Iterator, List, Optional, Tuple, Union

from .config import Config
from .config_namespace import ConfigNamespace
from .dependency_order import dependency_order
from .errors import (
    ConfigError, CycleError, InvalidOptionError, UnknownReferenceError, SourceLocation, closest_match,
)
from .extern_data import extern_data_from_config
from .layer_base import LayerBase, ParamSpec, get_layer_class
from .limits import fits_int64, int64_error_parts
from .network_integers import INPUT_KEYS, NESTED_NETWORK_OPTIONS, check_integers  # noqa: F401
from .network_meta import meta_notices, split_meta_entries
from .network_nesting import FRAMES_PER_NESTING_LEVEL, nesting_depth, recursion_room  # noqa: F401
from .references import (
    BASE, DATA, PREV, STEP_INDEX, STEP_INDEX_TEXT, Reference, check_layer_name, parse_reference, target_reference,
)
from .tensor import Data, Dim


class Network:
    """A built network: `layers` maps local names to layer objects, in build order."""

    per_step = False
    """Whether this network is a loop body: its layers have a value per step, not one per forward pass."""

    guessing_templates = False
    """True while a loop body's "prev:" templates are still first guesses (`LoopBody.infer`): shapes of shared
    parameters are checked once they settle."""

    def __init__(
        self,
        net_dict: Dict[str, Any],
        extern_data: Dict[str, Data],
        *,
        config: Optional[Config] = None,
        parent: Optional["Network"] = None,
        prefix: str = "",
        search: bool = False,
    ):
        if not isinstance(net_dict, dict):
            raise InvalidOptionError(f"a network must be a dict of layer name -> options, not {type(net_dict).__name__}",
                                     subject=f"network {prefix.rstrip('/') or ''}".strip())
        net_dict, meta = split_meta_entries(net_dict)  # RETURNN's '#config', '#repetition', ...: no layers
        self.net_dict = net_dict
        self.extern_data = extern_data
        self.config = config if config is not None else (parent.config if parent is not None else None)
        self.parent = parent
        self.prefix = prefix
        for name in net_dict:
            try:
                check_layer_name(name, prefix.rstrip("/"))
            except ConfigError as exc:
                raise exc.with_context(location=self.location(name) if isinstance(name, str) else None)
        self.search = search or (parent is not None and parent.search)
        """Whether the network is built for beam search (`task = "search"`): `choice` layers search."""
        self.layers: Dict[str, LayerBase] = {}
        self.notices: List[str] = [] if parent is None else parent.notices
        self.notices.extend(meta_notices(meta, f"network '{prefix.rstrip('/')}'" if prefix else "network",
                                         top_level=parent is None))
        self._constructing: List[str] = []
        self._extern_names = set()  # keys of `layers` that are extern data ("data", "data:KEY")
        self.dim_memo: Dict[Tuple[str, str, str], Dim] = {} if parent is None else parent.dim_memo
        """(layer path, description, kind) -> the Dim that layer created; shared by nested networks."""

    def get_config(self) -> ConfigNamespace:
        """RETURNN's `network.get_config()`: the `config` object the config file saw (eval strings reach a
        config function this way, e.g. `self.network.get_config().typed_value("transform")(source(0), ...)`)."""
        return self.config.namespace if self.config is not None else ConfigNamespace({}, {}, {})

    @staticmethod
    def cond_on_train(fn_train, fn_eval):
        """RETURNN's `network.cond_on_train` for config functions run by `eval` layers (SpecAugment's
        `transform`): `fn_train()` when the emitted graph trains, else `fn_eval()` (each run is emitted for
        training or evaluation, so this is a Python choice, not a graph cond)."""
        from . import frontend as rf

        return fn_train() if rf.get_run_ctx().training else fn_eval()

    @property
    def train_flag(self) -> bool:
        """RETURNN's `network.train_flag` for config functions: whether the emitted graph trains (a Python bool
        here, as each run is emitted for training or evaluation)."""
        from . import frontend as rf

        return rf.get_run_ctx().training

    @property
    def global_train_step(self):
        """RETURNN's `network.global_train_step` for config functions (a SpecAugment schedule): the trainer's
        step counter as a raw int64 scalar; 0 outside training."""
        from . import frontend as rf

        step = getattr(rf.get_run_ctx(), "global_train_step", None)
        if step is None:
            if rf.get_run_ctx().training:
                raise AttributeError("network.global_train_step: this training run has no step counter (the "
                                     "model runs for training without a trainer)")
            return rf.get_run_ctx().backend.convert_to_raw(0, "int64")
        return step

    # --- building ---------------------------------------------------------------
    def build(self, roots: Optional[List[str]] = None) -> "Network":
        """Constructs the needed layers (or `roots` and their dependencies)."""
        roots = self.output_layer_names() if roots is None else roots
        for name in self._build_order(roots):
            if name not in self.layers:
                self._construct(name)
        if self.parent is None:
            self._check_batch_size_source()
        return self

    def _check_batch_size_source(self) -> None:
        """A layer that adds a batch axis of its own (constant with_batch_dim, variable add_batch_axis) takes the
        batch size from the extern data the network reads; a network that reads none cannot run."""
        if self._extern_names:
            return
        for layer in self.all_layers():
            if layer.makes_batch_axis():
                local = layer.name.split("/")[0]
                raise ConfigError("its output has a batch axis, but the network reads no extern data that could "
                                  "give the batch size", layer=layer.name, location=self.location(local),
                                  suggestion="let some layer read 'data' (e.g. 'from': 'data'), or drop the batch "
                                             "axis (with_batch_dim=False / add_batch_axis=False)")

    def rebuild(self) -> "Network":
        """Infers every layer built so far again, as fresh layer objects from the same dict.

        The network's remembered Dims (`dim_memo`) are kept, so a layer whose inputs did not change gets
        the very same output Dims. Loop bodies rebuild until their "prev:" templates settle.
        """
        names = [name for name in self.layers if name not in self._extern_names]
        self.layers = {}
        self._extern_names = set()
        return self.build(names)

    def output_layer_names(self) -> List[str]:
        """"output", layers with a loss, and layers with "is_output_layer": True."""
        names = []
        for name, d in self.net_dict.items():
            if not isinstance(d, dict):
                raise InvalidOptionError(f"must be a dict of options, not {type(d).__name__} {d!r}",
                                         layer=self.path(name), location=self.location(name))
            if name == "output" or d.get("loss") or d.get("is_output_layer"):
                names.append(name)
        if not names:
            where = f"subnetwork '{self.prefix.rstrip('/')}'" if self.prefix else "the network"
            raise ConfigError(f"{where} has no output: no layer 'output', no layer with a loss, "
                              f"none with 'is_output_layer': True",
                              subject="network", suggestion="name the final layer 'output'",
                              location=self.location(None))
        return names

    def _build_order(self, roots: List[str]) -> List[str]:
        """Local layer names in dependency order (iterative DFS, so deep chains are fine)."""
        return dependency_order(roots, self._local_dependencies, lambda root: self._raw(root, None, "output"),
                                self._cycle_error)

    def _cycle_error(self, cycle: List[str]) -> CycleError:
        """The error for layers that depend on each other: `cycle` starts and ends with the same name."""
        return CycleError("layers depend on each other in a cycle: " + " -> ".join(self.path(n) for n in cycle),
                          layer=self.path(cycle[0]), location=self.location(cycle[0]),
                          suggestion="one of these layers must take its input from elsewhere")

    def _local_dependencies(self, name: str) -> List[str]:
        """The layers of this network that layer `name` needs built first."""
        d = self._raw(name, None, "from")
        try:
            cls = get_layer_class(d.get("class"), self.path(name))
            refs = cls.referenced_names(d) + self._target_references(name, d)
        except ConfigError as exc:
            raise exc.with_context(layer=self.path(name), location=self.location(name))
        result = []
        for option, ref in refs:
            local = parse_reference(ref, option, self.path(name)).local_name
            if local is not None and local not in result:
                self._raw(local, name, option)
                result.append(local)
        return result

    def _target_references(self, name: str, d: Dict[str, Any]) -> List[Tuple[str, Reference]]:
        target = d.get("target")
        if isinstance(target, str) and d.get("loss"):
            return [("target", target_reference(target, self.path(name)))]
        return []

    def _raw(self, name: str, user: Optional[str], option: str) -> Dict[str, Any]:
        """The config dict of local layer `name`; a clear error if there is none."""
        d = self.net_dict.get(name)
        if d is None:
            guess = closest_match(name, self.net_dict)
            if user is None:
                raise UnknownReferenceError(f"there is no layer '{name}' in the network", layer=self.path(name),
                                            location=self.location(None))
            raise UnknownReferenceError(
                f"'{option}' refers to '{name}', which is not in the network",
                layer=self.path(user), option=option, location=self.location(user),
                suggestion=f"did you mean '{guess}'?" if guess else "use 'data' for the network's input")
        if not isinstance(d, dict):
            raise InvalidOptionError(f"must be a dict of options, not {type(d).__name__} {d!r}",
                                     layer=self.path(name), location=self.location(name))
        if "class" not in d:
            raise InvalidOptionError("has no 'class'", layer=self.path(name), option="class",
                                     location=self.location(name),
                                     suggestion="add e.g. 'class': 'linear'")
        return d

    def _construct(self, name: str) -> LayerBase:
        path = self.path(name)
        if name in self._constructing:
            raise self._cycle_error(self._constructing[self._constructing.index(name):] + [name])
        self._constructing.append(name)
        try:
            d = self._raw(name, None, "from")
            cls = get_layer_class(d["class"], path)
            opts, notices = cls.check_options(d, path)
            self.notices.extend(notices)
            if opts["register_as_extern_data"] is not None:
                if self.parent is not None:
                    raise InvalidOptionError("'register_as_extern_data' works only for layers of the top-level "
                                             "network", layer=path, option="register_as_extern_data")
                self.registered_extern_data()  # checks the keys
            if opts.get("initial_output") is not None and not self.inside_loop:
                self.notices.append(f"layer '{path}': 'initial_output' only matters inside a rec unit; ignored")
            opts = cls.transform_config_dict(opts, self, lambda ref, option: self.get_layer(ref, name, option))
            self._default_n_out_from_target(name, cls, opts)
            layer = cls(path, self, opts)
            self._attach_loss(layer)
        except ConfigError as exc:
            raise exc.with_context(layer=path, location=self.location(name))
        finally:
            self._constructing.pop()
        self.layers[name] = layer
        return layer

    def _default_n_out_from_target(self, name: str, cls: type, opts: Dict[str, Any]) -> None:
        """As in RETURNN: a layer with a 'target' (with or without a loss) and no 'n_out' gets the target's
        number of classes (plus one, the blank, for ctc). A rec layer whose unit is a network dict and that has no
        loss takes its size from the unit's 'output' (its target may only give the loop's length)."""
        if not (opts.get("target") or opts.get("loss")) or opts.get("n_out") is not None \
                or opts.get("out_dim") is not None:
            return
        if isinstance(opts.get("unit"), dict) and not opts.get("loss"):
            return
        if not any("n_out" in klass.__dict__.get("options", {}) for klass in cls.__mro__):
            return  # the class does not define its output size by n_out
        dim = self.get_layer(target_reference(opts.get("target"), self.path(name)), name, "target").output.dim
        if dim is not None:
            opts["n_out"] = dim + (1 if opts.get("loss") == "ctc" else 0)

    def _attach_loss(self, layer: LayerBase) -> None:
        """Resolves the loss and its target, and checks them against the output template."""
        loss_name = layer.opts.get("loss")
        if not loss_name:
            return
        from .loss_base import loss_classes, make_loss  # the loss contract sits beside the layer contract

        cls = loss_classes().get(loss_name)
        if cls is not None and not cls.need_target and not layer.opts.get("target"):
            layer.loss = make_loss(layer, loss_name, layer.opts.get("loss_opts") or {}, None)
            return
        local_name = layer.name[len(self.prefix):]
        target = target_reference(layer.opts.get("target"), layer.name)
        layer.target_layer = self.get_layer(target, local_name, "target")
        layer.loss = make_loss(layer, loss_name, layer.opts.get("loss_opts") or {}, layer.target_layer)

    def layer_dim(self, layer: str, size: Optional[int], kind: str, description: str) -> Dim:
        """The Dim layer `layer` (full path) creates under `description` and `kind`: the one it created
        before if the size is still the same, else a new one (remembered for the next inference)."""
        if size is not None and not fits_int64(size):
            problem, suggestion = int64_error_parts(size)
            raise InvalidOptionError(f"its new dim '{description}' would have size {problem}", layer=layer,
                                     suggestion=suggestion)
        key = (layer, description, kind)
        dim = self.dim_memo.get(key)
        if dim is None or dim.size != size:
            dim = Dim(size, kind, description)
            self.dim_memo[key] = dim
        return dim

    # --- references ---------------------------------------------------------------
    def get_layer(self, ref: Union[str, Reference], user: Optional[str] = None, option: str = "from") -> LayerBase:
        """The layer that `ref` names, constructing it if needed; `user` is the asking layer's local name
        and `option` the option that names it (both for errors)."""
        ref = parse_reference(ref, option, self.path(user) if user else None)
        if ref.kind == DATA:
            return self._extern_layer(ref.name, user, option)
        if ref.kind == BASE:
            if self.parent is None:
                raise UnknownReferenceError(f"'{option}' refers to '{ref}', but 'base:' only works inside a "
                                            f"subnetwork or loop", option=option, suggestion=f"write '{ref.inner}'")
            return self.parent.get_layer(ref.inner, None, option)
        if ref.kind == STEP_INDEX:
            return self.step_index_layer(user, option)
        if ref.kind == PREV:
            return self.get_prev_layer(ref.path, user, option)
        layer = self.layers.get(ref.name)
        if layer is None:
            self._raw(ref.name, user, option)
            layer = self._construct(ref.name)
        return self._sub_layer(layer, ref, option)

    @staticmethod
    def _sub_layer(layer: LayerBase, ref: Reference, option: str) -> LayerBase:
        """Walks `ref.sub` down from `layer` (the layer `ref.name`)."""
        walked = ref.name
        for sub_name in ref.sub:
            sub = layer.get_sub_layer(sub_name)
            if sub is None:
                names = layer.sub_layer_names()
                guess = closest_match(sub_name, names)
                raise UnknownReferenceError(
                    f"'{option}' refers to '{ref}', but layer '{walked}' ({layer.layer_class}) has no sublayer "
                    f"'{sub_name}'", option=option,
                    suggestion=f"did you mean '{walked}/{guess}'?" if guess else
                    (f"its sublayers: {', '.join(names)}" if names else "it has no sublayers"))
            layer, walked = sub, f"{walked}/{sub_name}"
        return layer

    def get_prev_layer(self, path: str, user: Optional[str], option: str) -> LayerBase:
        """'prev:x' (`path` "x" or "x/y"): overridden by loop bodies; elsewhere an error."""
        raise UnknownReferenceError(f"'{option}' refers to 'prev:{path}', but 'prev:' only works inside a "
                                    f"recurrent loop body", option=option, suggestion=f"write '{path}'")

    def step_index_layer(self, user: Optional[str], option: str) -> LayerBase:
        """':i': overridden by loop bodies; elsewhere an error."""
        raise UnknownReferenceError(f"'{option}' refers to '{STEP_INDEX_TEXT}', but '{STEP_INDEX_TEXT}' is the "
                                    f"step index of a recurrent loop body; it only works inside one",
                                    option=option, suggestion="use a 'range_in_axis' layer for positions along an axis")

    def _extern_layer(self, key: str, user: Optional[str], option: str) -> LayerBase:
        name = "data" if key == "data" else f"data:{key}"
        if name in self.layers:
            return self.layers[name]
        if key not in self.extern_data:
            if self.parent is not None:
                return self.parent._extern_layer(key, user, option)
            registered = self.registered_extern_data().get(key)
            if registered is not None:
                return self.get_layer(registered, None, option)
            guess = closest_match(key, list(self.extern_data) + list(self.registered_extern_data()))
            raise UnknownReferenceError(
                f"'{option}' refers to data key '{key}', which extern_data does not define "
                f"(it has: {', '.join(self.extern_data) or 'nothing'})", option=option,
                suggestion=f"did you mean '{guess}'?" if guess else "add it to extern_data")
        cls = get_layer_class("source", self.path(name))
        opts, _ = cls.check_options({"class": "source", "data_key": key, "from": []}, self.path(name))
        layer = cls(self.path(name), self, opts)
        self.layers[name] = layer
        self._extern_names.add(name)
        return layer

    def registered_extern_data(self) -> Dict[str, str]:
        """Extern data keys that layers of this (top-level) network register as their output (RETURNN's
        `register_as_extern_data`): key -> layer name. "data:KEY" and a target KEY then name that layer."""
        found = {}
        for name, d in self.net_dict.items():
            key = d.get("register_as_extern_data") if isinstance(d, dict) else None
            if key is None:
                continue
            if not isinstance(key, str) or key == "data" or key in self.extern_data or key in found:
                why = "must be a data key (a str)" if not isinstance(key, str) else \
                    f"names data that exists already ({'layer ' + repr(found[key]) if key in found else 'extern_data'})"
                raise InvalidOptionError(f"'register_as_extern_data' {key!r} {why}", layer=self.path(name),
                                         option="register_as_extern_data", location=self.location(name),
                                         suggestion="choose another key")
            found[key] = name
        return found

    param_subscope = ""
    """What RETURNN puts between a nested network's owner and its layers in parameter names ("rec/" in a loop)."""

    @property
    def param_prefix(self) -> str:
        """The start of the parameter names of this network's layers: "<owner's param scope>/" (plus
        `param_subscope`) in a nested network, else the network's prefix."""
        owner = getattr(self, "owner", None)
        return self.prefix if owner is None else f"{owner.param_scope}/{self.param_subscope}"

    @property
    def inside_loop(self) -> bool:
        """Whether this network is a loop body or nested in one (its layers' values exist only per step)."""
        network: Optional[Network] = self
        while network is not None:
            if network.per_step:
                return True
            network = network.parent
        return False

    # --- naming and locations ---------------------------------------------------------
    def path(self, name: Optional[str]) -> str:
        return f"{self.prefix}{name}" if name else self.prefix.rstrip("/")

    def location(self, name: Optional[str]) -> Optional[SourceLocation]:
        if self.config is None or self.config.path is None:
            return None
        return self.config.layer_location(self.path(name)) if name else SourceLocation(
            self.config.path, self.config.network_line)

    def all_params(self) -> Iterator[Tuple[str, LayerBase, ParamSpec]]:
        """(full name "<layer path>/<param>", layer, spec) of every parameter of every built layer, nested
        networks included; independent of the order emission runs in."""
        owners: Dict[str, str] = {}
        for layer in self.all_layers():
            for name, spec in layer.own_params().items():  # shared ones (reuse_params) are their owner's
                full = f"{layer.param_scope}/{name}"
                if owners.setdefault(full, layer.name) != layer.name:
                    raise layer.error(f"the parameter name '{full}' is also one of layer '{owners[full]}' "
                                      f"(two layers' parameters may not share a name; 'name_scope'?)",
                                      option="name_scope", suggestion="give each layer its own 'name_scope'")
                yield full, layer, spec

    def is_flat(self) -> bool:
        """Whether no built layer owns a nested network (subnetwork, loop body): `layers` are then all layers."""
        return sum(1 for _ in self.all_layers()) == len(self.layers)

    def all_layers(self) -> Iterator[LayerBase]:
        """Every built layer, nested networks' layers right after their owner's inputs, in build order.
        Iterative (a stack of iterators), so that deep nesting needs no Python recursion."""
        stack: List[Iterator[Any]] = [iter(self.layers.values())]
        while stack:
            item = next(stack[-1], None)
            if item is None:
                stack.pop()
            elif isinstance(item, _AfterInner):  # the owner's nested layers are done: the owner comes next
                yield item.layer
                yield from getattr(item.layer, "built_sub_layers", lambda: [])()
            else:
                stack.append(iter([_AfterInner(item)]))
                inner = getattr(item, "subnetwork", None)
                if isinstance(inner, Network):
                    stack.append(iter(inner.layers.values()))


class _AfterInner:
    """A mark in `Network.all_layers`' walk: `layer`'s nested network has been listed."""

    def __init__(self, layer: LayerBase):
        self.layer = layer


def build_network(config: Config, extern_data: Optional[Dict[str, Data]] = None, search: bool = False) -> Network:
    """Builds the config's network (templates only, no TensorFlow); `search`: for beam search."""
    try:
        check_integers(config.values.get("network"),
                       {key: config.values.get(key) for key in INPUT_KEYS} if extern_data is None else {}, config)
    except ConfigError as exc:
        raise exc.with_context(location=config.layer_location(exc.layer) if exc.layer and config.path else None)
    try:
        extern = extern_data if extern_data is not None else extern_data_from_config(config.values)
    except ConfigError as exc:
        raise exc.with_context(location=SourceLocation(config.path) if config.path else None)
    net_dict = config.network
    with recursion_room(net_dict):
        return Network(net_dict, extern, config=config, search=search).build()


def build_from_dict(net_dict: Dict[str, Any], extern_data: Dict[str, Any]) -> Network:
    """Builds a network from a dict and extern_data options (as in a config); for tests and tools."""
    config = Config({"network": net_dict, "extern_data": extern_data})
    return build_network(config)
