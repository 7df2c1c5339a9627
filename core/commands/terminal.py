"""Moved to core/terminal.py (core.export uses it too, and export sits below commands); kept for the commands
that still import it from here. TODO(issue 35): import core.terminal everywhere and drop this module."""
from core.terminal import printable  # noqa: F401
