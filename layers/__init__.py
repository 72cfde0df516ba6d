"""The layer catalogue. Importing this package registers every layer and loss class."""

from . import basic, linear, losses, source  # noqa: F401
