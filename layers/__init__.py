"""The layer catalogue. Importing this package registers every layer and loss class."""

from . import (  # noqa: F401
    attention, basic, conv, elementwise, linear, losses, norm, rec, reduce, source, subnetwork,
)
