"""Support for the Python API's names. ``from orchestrator import harvest, synthesize, clean`` names both a
function and the module (or package) that holds it, and Python binds the package's attribute to the module as
soon as the module is imported: so those modules are callable, and calling one calls its function."""

from __future__ import annotations

import sys
import types
from typing import Any

__all__ = ["make_module_callable"]


class _CallableModule(types.ModuleType):
    __api_function__ = ""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return getattr(self, self.__api_function__)(*args, **kwargs)


def make_module_callable(module_name: str, function: str) -> None:
    """Make the module ``module_name`` callable: ``module(...)`` calls ``module.<function>(...)``."""
    module = sys.modules[module_name]
    module.__class__ = type(
        "CallableModule", (_CallableModule,), {"__api_function__": function, "__doc__": module.__doc__}
    )
