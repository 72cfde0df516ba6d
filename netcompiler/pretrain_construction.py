"""RETURNN's pretraining construction: the list of network dicts that the first epochs train, grown step by step
towards the config's `network` (pure Python, no framework).

`pretrain_steps(network, algo, ...)` gives one dict per pretraining step (the last one is the full network);
`expand_repetitions(steps, repetitions)` turns them into one dict per epoch. The algorithms behave as RETURNN's
`returnn/pretrain.py` (checked against it in `tests/test_network_schedule.py`, fixture made by
`tools/make_pretrain_fixture.py`):

* "from_output": the first step feeds the output layers from the layers nearest the input; each later step puts
  back one more layer between them (the layers the output reads from are removed and the output reads their
  inputs instead, until that would leave the output reading the input data directly).
* "from_input": step n holds the layers up to depth n from the input data, plus the output layers, reading the
  nearest layers that exist.
* "no_network_modifications": one step, the full network (repetitions still apply).
* a callable `algo(idx=i, net_dict=<a copy of the network>)` returning the dict of step i, or None to stop (the
  full network is added at the end).

Steps that add no trainable layer besides output layers are dropped (except with a callable), as in RETURNN. A
layer is an output layer when it is named in `output_layers`, is a softmax layer or has a `target`.
Where this departs from RETURNN: `from` given as one string is read as a one-element list (RETURNN compares it
by substring there), and `#` entries of the network (`#config`, ...) are no layers: every step keeps them.
"""

from __future__ import annotations

import copy
from typing import Any, Callable, Dict, List, Sequence, Union

from .errors import ConfigError
from .limits import is_int

NetDict = Dict[str, Any]
CONSTRUCTION_ALGOS = ("from_output", "from_input", "no_network_modifications")


def _pretrain_error(option: str, message: str, suggestion: str) -> ConfigError:
    return ConfigError(message, subject=f"config key 'pretrain' option '{option}'", suggestion=suggestion)


def sources_of(layer: Dict[str, Any]) -> List[str]:
    """A layer's `from` as a list (RETURNN's default: ["data"])."""
    sources = layer.get("from", ["data"])
    if isinstance(sources, str):
        return [sources]
    return list(sources or [])


def layer_names(net: NetDict) -> List[str]:
    return sorted(name for name in net if not (isinstance(name, str) and name.startswith("#")))


class _Construction:
    """The growing step dicts of one pretraining construction."""

    def __init__(self, network: NetDict, output_layers: Sequence[str], input_layers: Sequence[str]):
        self.network = network
        self.output_layers = list(output_layers)
        self.input_layers = list(input_layers)

    def is_output(self, net: NetDict, name: str) -> bool:
        layer = net[name]
        return name in self.output_layers or layer.get("class") == "softmax" or "target" in layer

    def readers_of(self, sources: Sequence[str]) -> List[str]:
        """The layers of the full network (by name) that read any of `sources`."""
        return [name for name in layer_names(self.network) if set(sources_of(self.network[name])) & set(sources)]

    # --- from_output ---------------------------------------------------------------------
    def from_output(self) -> List[NetDict]:
        steps = [self.network]
        while True:
            simpler = self._one_layer_less(steps[0])
            if simpler is None:
                return steps
            steps.insert(0, simpler)

    def _one_layer_less(self, net: NetDict):
        net = copy.deepcopy(net)
        for name in self.output_layers:
            if name not in net:
                raise _pretrain_error("output_layers", f"layer {name!r} is not in the network",
                                      f"name the network's output layers, e.g. output_layers = {layer_names(net)[-1:]}")
        while True:
            before = sorted({src for name in self.output_layers for src in sources_of(net[name])})
            new_sources, removed = set(), set()
            for name in self.output_layers:
                for source in sources_of(net[name]):
                    if source in self.input_layers:
                        new_sources.add(source)
                    elif source in net:
                        new_sources.update(sources_of(net[source]))
                        del net[source]
                        removed.add(source)
                    elif source not in removed:
                        raise _pretrain_error("construction_algo", f"output layer {name!r} reads {source!r}, "
                                              f"which is no layer of the network (from_output)",
                                              "give the output layer's inputs as layer names")
            if sorted(new_sources) == before:
                return None
            for name in self.output_layers:
                net[name]["from"] = sorted(new_sources)
            if new_sources & set(self.input_layers):
                continue  # the output would read the input directly: remove further
            if all(not self.network[name].get("trainable", True) for name in removed):
                continue
            return net

    # --- from_input ----------------------------------------------------------------------
    def from_input(self) -> List[NetDict]:
        steps, depth = [], 1
        while True:
            step = self._up_to_depth(depth)
            if step is None:
                return steps + [self.network]
            steps.append(step)
            depth += 1

    def _up_to_depth(self, depth: int):
        net: NetDict = {}
        missing = set()
        frontier = list(self.input_layers)

        def add(name: str) -> None:
            missing.discard(name)
            net[name] = copy.deepcopy(self.network[name])
            missing.update(set(sources_of(net[name])) - set(net) - set(self.input_layers))

        added = True
        while added:  # layers without parameters (e.g. input windows) come with the input
            added = False
            for name in self.readers_of(frontier):
                if name not in net and not self.network[name].get("trainable", True):
                    add(name)
                    frontier.append(name)
                    added = True
        for _ in range(depth):
            frontier = [name for name in self.readers_of(frontier) if name not in net]
            for name in frontier:
                add(name)
            if not frontier:
                return None
        for name in layer_names(self.network):
            if name not in net and self.is_output(self.network, name):
                add(name)
        if not missing:
            return None
        for name in sorted(net):
            existing = self._existing_inputs(net, name, [], {name})
            if sources_of(net[name]) != existing:
                net[name]["from"] = [src for src in existing if src not in self.input_layers]
        return net

    def _existing_inputs(self, net: NetDict, name: str, found: List[str], visited: set) -> List[str]:
        """The nearest layers of `net` (or input data) that layer `name` of the full network reads through."""
        for source in sources_of(self.network[name]):
            if source in net or source in self.input_layers:
                if source not in found:
                    found.append(source)
            elif source not in visited and source in self.network:
                visited.add(source)
                self._existing_inputs(net, source, found, visited)
        return found

    # --- shared --------------------------------------------------------------------------
    def drop_steps_without_new_trainable_layers(self, steps: List[NetDict]) -> List[NetDict]:
        kept = []
        for before, after in zip([{}] + steps[:-2], steps[:-1]):
            if any(name not in before and not self.is_output(after, name) and after[name].get("trainable", True)
                   for name in layer_names(after)):
                kept.append(after)
        return kept + [steps[-1]]


def pretrain_steps(network: NetDict, algo: Union[str, Callable] = "from_output",
                   output_layers: Sequence[str] = ("output",), input_layers: Sequence[str] = ("data",)
                   ) -> List[NetDict]:
    """The network dict of each pretraining step, the full `network` last (see the module docstring)."""
    construction = _Construction(network, output_layers, input_layers)
    if callable(algo):
        steps, idx = [], 0
        while True:
            step = algo(idx=idx, net_dict=copy.deepcopy(network))
            if not step:
                return steps + [network]
            if not isinstance(step, dict):
                raise _pretrain_error("construction_algo", f"the function returned {type(step).__name__} for "
                                      f"step {idx}, not a network dict", "return a dict of layers, or None to stop")
            steps.append(step)
            idx += 1
    if algo == "from_output":
        steps = construction.from_output()
    elif algo == "from_input":
        steps = construction.from_input()
    elif algo == "no_network_modifications":
        steps = [network]
    else:
        raise _pretrain_error("construction_algo", f"unknown construction {algo!r}",
                              f"use one of {', '.join(map(repr, CONSTRUCTION_ALGOS))} or a function "
                              f"(idx, net_dict) -> dict or None")
    return construction.drop_steps_without_new_trainable_layers(steps)


def repetitions_per_step(repetitions: Any, num_steps: int) -> List[int]:
    """RETURNN's `repetitions`: epochs per step, as an int (every step), a list (the last entry repeats for the
    remaining steps) or a dict ({'default': n, 'final': m, step index: k})."""
    def count(value, where):
        if not is_int(value) or value < 0:
            raise _pretrain_error("repetitions", f"{where}: expected a number of epochs >= 0, got {value!r}",
                                  "e.g. 'repetitions': 2")
        return int(value)

    if not repetitions:
        return [1] * num_steps
    if isinstance(repetitions, dict):
        rest = dict(repetitions)
        result = [count(rest.pop("default", 1), "'default'")] * num_steps
        for key, value in rest.items():
            index = num_steps - 1 if key == "final" else key
            if not is_int(index) or not 0 <= index < num_steps:
                raise _pretrain_error("repetitions", f"key {key!r} is no step (steps 0..{num_steps - 1}, "
                                      f"'default', 'final')",
                                      "e.g. 'repetitions': {'default': 1, 'final': 2}")
            result[index] = count(value, f"step {key!r}")
        return result
    if is_int(repetitions):
        repetitions = [repetitions]
    if not isinstance(repetitions, (list, tuple)) or not 0 < len(repetitions) <= num_steps:
        raise _pretrain_error("repetitions", f"expected an int, a dict or a list of at most {num_steps} ints (one "
                              f"per step), got {repetitions!r}",
                              "e.g. 'repetitions': 2 or [1, 1, 2]")
    result = [count(value, f"entry {i}") for i, value in enumerate(repetitions)]
    return result + [result[-1]] * (num_steps - len(result))


def expand_repetitions(steps: List[NetDict], repetitions: Any) -> List[NetDict]:
    """One dict per epoch: each step as many times as its repetitions say (a step's `#repetition` entry wins)."""
    counts = repetitions_per_step(repetitions, len(steps))
    epochs = []
    for i, (step, times) in enumerate(zip(steps, counts)):
        if "#repetition" in step:
            step = dict(step)
            times = repetitions_per_step([step.pop("#repetition")], 1)[0]
        epochs.extend(copy.deepcopy(step) for _ in range(times))
    return epochs
