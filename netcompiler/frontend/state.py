"""`rf.State`: a recurrent state, a dict whose entries are also attributes (as RETURNN's frontend has it)."""

from __future__ import annotations

from typing import Any


class State(dict):
    """A (nested) recurrent state: `state.h` is `state["h"]`; built from keyword arguments or a dict."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"the state has no entry {name!r} (entries: {sorted(self)})") from None

    def __setattr__(self, name: str, value: Any) -> None:
        self[name] = value

    def __delattr__(self, name: str) -> None:
        del self[name]

    def __repr__(self):
        return f"State({dict.__repr__(self)})"
