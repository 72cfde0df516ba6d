"""`TensorDict`: named Tensors, as a frontend model's steps receive their inputs (`extern_data`) and declare
their outputs (`model_outputs`)."""

from __future__ import annotations

from typing import Dict, Iterator, Mapping, Optional, Tuple

from .data import Data
from .tensor import Tensor


class TensorDict:
    """An ordered mapping key -> Tensor (RETURNN's `TensorDict`; `data` is the dict itself).

    In a step the Tensors carry the batch's raw values; as templates (`copy_template`) they carry none.
    """

    def __init__(self, data: Optional[Mapping[str, Tensor]] = None):
        self.data: Dict[str, Tensor] = {}
        for key, value in (data or {}).items():
            self[key] = value

    @classmethod
    def from_templates(cls, templates: Mapping[str, Data]) -> "TensorDict":
        """Template Tensors (no raw values) for `templates` (key -> Data)."""
        return cls({key: Tensor(data) for key, data in templates.items()})

    def __getitem__(self, key: str) -> Tensor:
        try:
            return self.data[key]
        except KeyError:
            raise KeyError(f"{key!r} is not in this TensorDict (keys: {', '.join(self.data) or 'none'})") from None

    def __setitem__(self, key: str, value: Tensor) -> None:
        if not isinstance(value, Tensor):
            raise TypeError(f"TensorDict[{key!r}]: expected a Tensor, got {type(value).__name__}")
        self.data[key] = value

    def __contains__(self, key: object) -> bool:
        return key in self.data

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)

    def keys(self):
        return self.data.keys()

    def values(self):
        return self.data.values()

    def items(self):
        return self.data.items()

    def update(self, other, *, auto_convert: bool = False) -> None:
        """Adds the entries of another TensorDict or dict (values must be Tensors; `auto_convert` is accepted
        for RETURNN's signature and changes nothing here)."""
        items = other.data.items() if isinstance(other, TensorDict) else dict(other).items()
        for key, value in items:
            self[key] = value

    def copy_template(self) -> "TensorDict":
        """The same keys and templates, without raw values."""
        return TensorDict({key: Tensor(value.data) for key, value in self.data.items()})

    def reset_content(self) -> None:
        """Drops the raw values, keeping the templates."""
        for value in self.data.values():
            value.raw = None

    def as_raw_tensor_dict(self) -> Dict[str, object]:
        """key -> raw value (None where a Tensor has none)."""
        return {key: value.raw for key, value in self.data.items()}

    def templates(self) -> Dict[str, Data]:
        return {key: value.data for key, value in self.data.items()}

    def __repr__(self) -> str:
        inner = ", ".join(f"{key!r}: {value.data.describe()}" for key, value in self.data.items())
        return f"TensorDict({{{inner}}})"


__all__: Tuple[str, ...] = ("TensorDict",)
