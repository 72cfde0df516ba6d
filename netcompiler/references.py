"""Layer references: the strings a network dict uses to name layers and data, parsed in one place.

Forms (`parse_reference` turns each into a `Reference`):

* "x": layer x of the same network; "x/y/z": sublayer z of sublayer y of x
  (kind LAYER, `name` "x", `sub` ("y", "z"));
* "data": the network's input (= "data:data"); "data:KEY": extern data KEY
  (kind DATA, `name` the key; everything after "data:" is the key);
* "base:R": reference R resolved in the enclosing network (kind BASE, `inner`
  the parsed R), so "base:base:x" is two levels up and "base:prev:x" is
  "prev:x" of an enclosing loop body;
* "prev:x": layer x of the previous step of a loop body (kind PREV);
  "prev:x/y" is sublayer y of x at the previous step (the loop body keeps one
  placeholder per such path). After "prev:" only a local layer path may
  follow: "prev:base:x" or "prev:data" are malformed (a value from outside the
  loop is the same at every step);
* ":i": the step index of a loop body (kind STEP_INDEX).

A loss target is not a reference but names one (`target_reference`):
"layer:R" is reference R, any other string extern data key; none means
"classes", as in RETURNN.

Layer names themselves are checked by `check_layer_name`: a name that a
reference would read as something else ("data", "data:x", "x/y") or that
cannot be written (empty, control characters) is refused.

Malformed strings (empty, "prev:", "data:", "base:", an empty path part as in
"x//y", a control character, an unknown prefix such as "pref:x", or not a
string at all) raise `MalformedReferenceError` naming the option.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Optional, Tuple, Union

from .errors import ConfigError, MalformedReferenceError, closest_match

LAYER = "layer"
DATA = "data"
BASE = "base"
PREV = "prev"
STEP_INDEX = "step_index"

STEP_INDEX_TEXT = ":i"
_PREFIXES = ("data", "base", "prev")


@dataclass(frozen=True)
class Reference:
    """One parsed reference; `str()` gives it back in its canonical written form."""

    kind: str
    """LAYER, DATA, BASE, PREV or STEP_INDEX."""
    name: str = ""
    """The local layer name (LAYER, PREV) or the extern data key (DATA); "" otherwise."""
    sub: Tuple[str, ...] = ()
    """Sublayer names below `name`, outermost first (LAYER, PREV)."""
    inner: Optional["Reference"] = None
    """What a BASE reference names in the enclosing network."""

    @property
    def path(self) -> str:
        """"x/y/z" for a layer or prev: reference (its local path without the prefix)."""
        return "/".join((self.name,) + self.sub)

    @property
    def local_name(self) -> Optional[str]:
        """The layer of this network that must be built first for this reference, None if there is none
        ("prev:" reads the previous step, so it is no build-order dependency)."""
        return self.name if self.kind == LAYER else None

    def __str__(self) -> str:
        if self.kind == LAYER:
            return self.path
        if self.kind == DATA:
            return f"data:{self.name}"
        if self.kind == BASE:
            return f"base:{self.inner}"
        if self.kind == PREV:
            return f"prev:{self.path}"
        return STEP_INDEX_TEXT


def parse_reference(ref: Union[str, Reference], option: str = "from", layer: Optional[str] = None) -> Reference:
    """The `Reference` that string `ref` (the value of `option` of `layer`) writes; a Reference is returned
    as it is. Raises MalformedReferenceError for a string that is no reference (see the module docstring)."""
    if isinstance(ref, Reference):
        return ref
    if not isinstance(ref, str):
        raise MalformedReferenceError(f"option '{option}' must name a layer, not {type(ref).__name__} {ref!r}",
                                      layer=layer, option=option, suggestion="write the layer's name as a string")
    parsed = _parse(ref)
    if isinstance(parsed, Reference):
        return parsed
    problem, suggestion = parsed
    raise MalformedReferenceError(f"option '{option}' has {ref!r}, which is not a layer reference: {problem}",
                                  layer=layer, option=option, suggestion=suggestion)


def target_reference(target: Optional[str], layer: Optional[str] = None) -> Reference:
    """What a loss target names: "layer:R" is reference R, any other string an extern data key
    (none: "classes", as in RETURNN)."""
    target = target or "classes"
    if not isinstance(target, str):
        raise MalformedReferenceError(f"option 'target' must be a data key or 'layer:NAME', not {target!r}",
                                      layer=layer, option="target")
    if target.startswith("layer:"):
        return parse_reference(target[len("layer:"):], "target", layer)
    if not target.isprintable():
        raise MalformedReferenceError(f"option 'target' has {target!r}, which contains a control character",
                                      layer=layer, option="target")
    return Reference(DATA, target)


@functools.lru_cache(maxsize=4096)
def _parse(text: str) -> Union[Reference, Tuple[str, Optional[str]]]:
    """The Reference, or (problem, suggestion) if `text` is malformed. Cached: networks repeat references."""
    if not text:
        return "it is empty", "name a layer, or 'data' for the network's input"
    if not text.isprintable():
        return "it contains a control character", None
    if text == STEP_INDEX_TEXT:
        return Reference(STEP_INDEX)
    if text == "data":
        return Reference(DATA, "data")
    prefix, colon, rest = text.partition(":")
    if not colon:
        return _layer_path(LAYER, text)
    if not prefix:
        return "the only reference starting with ':' is ':i', the step index of a loop body", None
    if prefix not in _PREFIXES:
        guess = closest_match(prefix, _PREFIXES)
        return (f"unknown prefix '{prefix}:'",
                f"did you mean '{guess}:{rest}'?" if guess else
                "references are 'x', 'x/y', 'data', 'data:KEY', 'base:x', 'prev:x' or ':i'")
    if not rest:
        return f"nothing follows '{prefix}:'", f"write '{prefix}:NAME'"
    if prefix == "data":
        return Reference(DATA, rest)
    if prefix == "base":
        inner = _parse(rest)
        return Reference(BASE, inner=inner) if isinstance(inner, Reference) else inner
    if ":" in rest:
        return ("'prev:' must be followed by a layer of the loop body",
                "a value from outside the loop is the same at every step; drop 'prev:'")
    return _layer_path(PREV, rest)


def _layer_path(kind: str, text: str) -> Union[Reference, Tuple[str, Optional[str]]]:
    parts = text.split("/")
    if "" in parts:
        return "it has an empty part between '/'", "write 'layer/sublayer'"
    return Reference(kind, parts[0], tuple(parts[1:]))


def check_layer_name(name: object, network: str = "") -> None:
    """Raises a ConfigError if `name` (a key of the network dict `network`) cannot be a layer's name:
    not a string, empty, with a control character, or written like a reference to something else."""
    where = f"network '{network}'" if network else "the network"
    if not isinstance(name, str):
        raise ConfigError(f"{where} has a layer named {name!r} ({type(name).__name__}); layer names are "
                                    f"strings", subject="network", suggestion=f"write '{name}'")
    problem, suggestion = _name_problem(name)
    if problem:
        raise ConfigError(f"{where} has a layer named {name!r}, which {problem}", subject="network",
                                    suggestion=suggestion)


def _name_problem(name: str) -> Tuple[Optional[str], Optional[str]]:
    if not name:
        return "is empty", "give the layer a name"
    if not name.isprintable():
        return "contains a control character", "use letters, digits and '_'"
    safe = "".join(c if c.isalnum() or c == "_" else "_" for c in name).strip("_") or "layer"
    if name == "data" or name.startswith("data:"):
        return (f"is how references name extern data: '{name}' would always read the data, never this layer",
                f"rename the layer, e.g. '{safe}_layer'")
    if "/" in name:
        return "has '/', which references read as 'layer/sublayer'", f"rename the layer, e.g. '{safe}'"
    prefix, colon, _ = name.partition(":")
    if colon and (prefix in _PREFIXES or not prefix):
        return f"starts like the reference prefix '{prefix}:'", f"rename the layer, e.g. '{safe}'"
    return None, None
