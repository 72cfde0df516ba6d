"""Nested networks: the `subnetwork` layer, and the helpers that loop bodies (`rec` units) share with it.

A nested network is a `netcompiler.network.Network` whose parent is the network
of the layer that owns it. Its layers are named "<owner>/<inner>" (so are their
parameters: "sub/inner/W"), "data" inside is the owner's input, and "base:x"
is layer x of the parent network.
"""

from typing import Any, Callable, Dict, List, Optional, Tuple

from netcompiler.errors import ConfigError, InvalidOptionError, closest_match
from netcompiler.layer_base import NONE_TYPE, LayerBase, Option, registered_layer_classes
from netcompiler.network import Network
from netcompiler.references import BASE, Reference, parse_reference, target_reference
from netcompiler.tensor import Data


def parent_references(net_dict: Any) -> List[str]:
    """The names of the enclosing network that `net_dict` refers to with "base:".

    Nested networks inside `net_dict` count too: their own "base:" references
    come back from their layer class's `referenced_names` with one "base:"
    already taken off, so "base:base:x" two levels down is "x" here. Entries
    without a known class are skipped: building the nested network reports them
    with their path.
    """
    if not isinstance(net_dict, dict):
        return []
    classes = registered_layer_classes()
    found: List[str] = []
    for d in net_dict.values():
        if not isinstance(d, dict) or not isinstance(d.get("class"), str) or d["class"] not in classes:
            continue
        refs = [_parsed_or_none(parse_reference, ref) for _, ref in classes[d["class"]].referenced_names(d)]
        if isinstance(d.get("target"), str):
            refs.append(_parsed_or_none(target_reference, d["target"]))
        for ref in refs:
            if ref is not None and ref.kind == BASE and str(ref.inner) not in found:
                found.append(str(ref.inner))
    return found


def _parsed_or_none(parse: Callable[[Any], Reference], text: Any) -> Optional[Reference]:
    """`parse(text)`, or None if `text` is malformed: building the nested network reports it with its path."""
    try:
        return parse(text)
    except ConfigError:
        return None


def build_nested_network(owner: LayerBase, net_dict: Dict[str, Any], extern_data: Dict[str, Data],
                         network_class: type = Network) -> Network:
    """Builds `net_dict` as a network nested in `owner`'s network, its layers named "<owner>/<name>".

    `network_class` lets loop bodies use a Network subclass (one that resolves "prev:"). The
    nested network's `owner` is `owner` (emission feeds its extern data from the owner's input).
    """
    inner = network_class(net_dict, extern_data, parent=owner.network, prefix=f"{owner.name}/")
    inner.owner = owner
    return inner.build()


def external_dependencies(owner: LayerBase, inner: Network) -> List[LayerBase]:
    """Layers of `owner`'s network that the layers of `inner` read (through "base:" or extern data)."""
    found: List[LayerBase] = []
    for layer in inner.all_layers():
        for dep in layer.dependencies():
            if dep.network is owner.network and dep not in found:
                found.append(dep)
    return found


class SubnetworkLayer(LayerBase):
    """A whole network as one layer: its output is the output of the inner layer "output".

    Options: `subnetwork` (required: a network dict with a layer "output"), `concat_sources` (True),
    `load_on_init` (None; not supported yet), and the common ones (`dropout` applies to the input).

    Inside, "data" is this layer's input (all sources concatenated on the feature dim). With
    `concat_sources=False` each source is also "data:<source name>" and "data:0" ... "data:<n-1>",
    and "data" is the first source. Other "data:KEY" fall back to the network's extern data, and
    "base:x" is layer x of the enclosing network (built before this layer). With `"from": []`,
    "data" inside falls back to the enclosing network's "data" as well.

    The inner layers are built like a network's: "output", layers with a loss and layers with
    `is_output_layer` (and what they need). Other layers reach them as "sub/inner" (built on
    demand). Parameters belong to the inner layers ("sub/inner/W"); this layer itself has none.
    Attribute: `subnetwork` (the inner Network; its `owner` is this layer).
    """

    layer_class = "subnetwork"
    options = {
        "subnetwork": Option(types=(dict,), ref="network", doc="the inner network dict, with a layer 'output'"),
        "concat_sources": Option(True, (bool,)),
        "load_on_init": Option(None, (str, dict, NONE_TYPE), doc="not supported"),
    }
    network_class = Network
    _dependencies: Optional[List[LayerBase]] = None

    @classmethod
    def referenced_names(cls, d: Dict[str, Any]) -> List[Tuple[str, str]]:
        refs = super().referenced_names(d)
        return refs + [("subnetwork", name) for name in parent_references(d.get("subnetwork"))]

    def make_output(self) -> Data:
        if self.opts["load_on_init"] is not None:
            raise self.error("'load_on_init' is not supported by netcompiler yet", option="load_on_init",
                             suggestion="load the parameters with the model's checkpoint instead")
        net_dict = self.opts["subnetwork"]
        self._check_has_output(net_dict)
        self.subnetwork = build_nested_network(self, net_dict, self._inner_extern_data(), self.network_class)
        return self.subnetwork.layers["output"].output.copy(name=self.name)

    def _check_has_output(self, net_dict: Dict[str, Any]) -> None:
        if "output" in net_dict:
            return
        guess = closest_match("output", net_dict)
        raise self.error(
            f"the subnetwork has no layer 'output' (its layers: {', '.join(map(str, net_dict)) or 'none'})",
            option="subnetwork", kind=InvalidOptionError,
            suggestion=f"rename '{guess}' to 'output'" if guess else "name the layer that gives the result 'output'")

    def _inner_extern_data(self) -> Dict[str, Data]:
        """What "data" and "data:KEY" mean inside (keys the inner network does not have go to the parent)."""
        return {key: self.input_data if src is None else src.output
                for key, src in self._inner_source_layers().items()}

    def _inner_source_layers(self) -> Dict[str, Optional[LayerBase]]:
        """Extern data keys inside -> the source layer they are (None: this layer's concatenated input)."""
        if not self.sources:
            return {}
        if self.opts["concat_sources"]:
            return {"data": None}
        keys: Dict[str, Optional[LayerBase]] = {"data": self.sources[0]}
        for i, source in enumerate(self.sources):
            keys[str(i)] = source
            keys.setdefault(self._local_name(source), source)
        return keys

    @staticmethod
    def _local_name(layer: LayerBase) -> str:
        """The name a layer has in its own network ("a" for "sub/a"; "data:classes" stays)."""
        prefix = layer.network.prefix
        return layer.name[len(prefix):] if prefix and layer.name.startswith(prefix) else layer.name

    def emit(self, inputs):
        """Runs the inner network in a nested context whose extern data is this layer's input; its "output"."""
        extern = {key: inputs.x if src is None else inputs.value(src)
                  for key, src in self._inner_source_layers().items()}
        inner = inputs.nested(self.subnetwork, extern)
        inner.emit_all()
        return inner.value(self.subnetwork.layers["output"])

    def get_sub_layer(self, name: str):
        if name.split("/", 1)[0] not in self.subnetwork.net_dict:
            return None
        return self.subnetwork.get_layer(name)

    def sub_layer_names(self) -> List[str]:
        return [str(name) for name in self.subnetwork.net_dict]

    def dependencies(self) -> List[LayerBase]:
        # computed once: the inner network is built with this layer and never changes. Without the memo each
        # nesting level asks every deeper level again, and the time doubles with each level (dump-net --dot).
        if self._dependencies is None:
            deps = super().dependencies()
            self._dependencies = deps + [d for d in external_dependencies(self, self.subnetwork) if d not in deps]
        return list(self._dependencies)
