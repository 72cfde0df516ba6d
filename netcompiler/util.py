"""Small helpers that RETURNN configs import (RETURNN's `returnn.util.basic`): change the import line to
`from netcompiler.util import get_login_username`."""

from __future__ import annotations

import getpass
import os


def get_login_username() -> str:
    """The name of the user running this process (for paths like `/tmp/<user>/...` in configs); the uid as a
    string where the system knows no name for it (as in a container without a passwd entry)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())
