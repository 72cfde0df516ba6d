"""The errors netcompiler reports to users, one class per kind of failure.

Everything derived from `NetcompilerError` is a mistake the user can fix
(in a config, a data file, a command line); the command-line tools print its
message and exit with status 2, without a traceback. Any other exception is a
bug in netcompiler.
"""

from __future__ import annotations

import difflib
import errno
from dataclasses import dataclass
from typing import Iterable, Optional


def closest_match(word: str, candidates: Iterable[str]) -> Optional[str]:
    """The candidate most similar to `word`, if one is similar enough to suggest."""
    matches = difflib.get_close_matches(str(word), [str(c) for c in candidates], n=1, cutoff=0.6)
    return matches[0] if matches else None


def one_line(text: str) -> str:
    """`text` with control characters (a newline from a config value, ...) written as escapes: a message stays one
    line."""
    return text if text.isprintable() else "".join(c if c.isprintable() else c.encode("unicode_escape").decode()
                                                   for c in text)


def quoted(name) -> str:
    """A name from a config as a message shows it: 'name' if it is a printable string, else its repr (so a newline
    or another control character cannot break a one-line message)."""
    return f"'{name}'" if isinstance(name, str) and name.isprintable() else repr(name)


@dataclass(frozen=True)
class SourceLocation:
    """Where in a config file something was written."""

    file: str
    line: Optional[int] = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file


class NetcompilerError(Exception):
    """A problem in the user's input, reported without a traceback."""


class ConfigError(NetcompilerError):
    """A mistake in a config file.

    The message names what is wrong (`subject`: usually the layer), the option
    concerned (put in front as "option 'X': " where neither the message nor the
    subject quotes it), and a suggestion where one is obvious. The network builder
    adds the config file and line of the layer's entry when it knows them.
    """

    def __init__(
        self,
        message: str,
        *,
        layer: Optional[str] = None,
        option: Optional[str] = None,
        suggestion: Optional[str] = None,
        subject: Optional[str] = None,
        location: Optional[SourceLocation] = None,
    ):
        self.message = message
        self.layer = layer
        self.option = option
        self.suggestion = suggestion
        self.subject = subject
        self.location = location
        super().__init__(str(self))

    def with_context(self, *, layer: Optional[str] = None, location: Optional[SourceLocation] = None):
        """Fill in the layer and location if they are not known yet (the line too where only the file is);
        returns self."""
        if self.layer is None and self.subject is None and layer is not None:
            self.layer = layer
        if location is not None and (self.location is None or self.location.line is None):
            self.location = location
        self.args = (str(self),)
        return self

    def __str__(self) -> str:
        parts = []
        if self.location is not None:
            parts.append(f"{self.location}: ")
        if self.subject is not None:
            parts.append(f"{self.subject}: ")
        elif self.layer is not None:
            parts.append(f"layer '{self.layer}': ")
        if self.option is not None and f"'{self.option}'" not in self.message + (self.subject or ""):
            parts.append(f"option '{self.option}': ")  # the message did not name it
        parts.append(self.message)
        if self.suggestion:
            parts.append(f" -- {self.suggestion}")
        return one_line("".join(parts))


class ConfigFileError(ConfigError):
    """The config file cannot be read, or lacks something every config needs."""


class UnknownLayerClassError(ConfigError):
    """A layer's "class" names no registered layer class."""


class UnknownOptionError(ConfigError):
    """A layer (or dataset) got an option its class does not have."""


class MissingOptionError(ConfigError):
    """A required option was not given."""


class InvalidOptionError(ConfigError):
    """An option has a value of the wrong type or outside what is allowed."""


class MalformedReferenceError(InvalidOptionError):
    """A string that should name a layer or data key is not written as a reference ("", "prev:", ...)."""


class UnknownReferenceError(ConfigError):
    """A layer refers to a layer or data key that does not exist."""


class CycleError(ConfigError):
    """Layers depend on each other in a cycle."""


class DimMismatchError(ConfigError):
    """Inputs of a layer have dims that do not fit together."""


class AxisError(ConfigError):
    """An axis description does not apply to the layer's input."""


class DataFileError(NetcompilerError):
    """A data file (HDF, ...) is missing, unreadable or not in the expected layout."""

    def __init__(self, path: str, problem: str):
        self.path = str(path)
        self.problem = problem
        super().__init__(f"data file '{self.path}': {problem}")


class DataContentError(DataFileError):
    """A sequence's data cannot be right: a class index outside [0, dim), a NaN or inf in features.

    Names the file (or the dataset, if it has no file), the sequence (index and tag), the data key and what
    is wrong, with a suggestion. Raised where the sequence is read, before it reaches the network.
    """

    def __init__(self, source: str, problem: str, suggestion: Optional[str] = None):
        self.source = str(source)
        self.suggestion = suggestion
        DataFileError.__init__(self, self.source, problem)
        self.args = (str(self),)

    def __str__(self) -> str:
        text = f"{self.source}: {self.problem}"
        return f"{text} -- {self.suggestion}" if self.suggestion else text


class CheckpointError(NetcompilerError):
    """A checkpoint cannot be found or read."""


# what an OSError's errno says about the model folder (ModelFolderError's reasons), one set for every writer
DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
NOT_WRITABLE_ERRNOS = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})


class ModelFolderError(NetcompilerError):
    """The model folder cannot be used: another run holds it, it is not writable, or its disk is full."""

    def __init__(self, message: str, path: Optional[str] = None, reason: str = ""):
        self.path = path
        self.reason = reason  # "in use", "not writable", "disk full" or ""
        super().__init__(message)


class TrainingError(NetcompilerError):
    """Training cannot go on (for example: the loss is not finite)."""


class TemplateMismatchError(AssertionError):
    """A layer's emitted tensor disagrees with its own template: a netcompiler bug."""
