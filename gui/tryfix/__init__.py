"""Try it: a finding's fix switched on at run time, the run recorded through the Run dock, then a Compare of
before vs after with the predicted-vs-measured verdict on top (core/tryfix for the Qt-free parts)."""
from gui.tryfix.controller import TryController, install

__all__ = ["TryController", "install"]
