"""The check that this interpreter can load the extension: the same Python version and the same
PyTorch as it was compiled against. Anything else fails with one line that names both."""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Tuple


def import_torch(python: str, python_version: Tuple[int, int], torch_version: str) -> ModuleType:
    """Imports torch, or raises ImportError saying what the extension was built for and what
    this interpreter is instead."""
    built = (f"tensorstream was built for {python} (Python {python_version[0]}."
             f"{python_version[1]}) with PyTorch {torch_version}")
    here = f"this is {sys.executable} (Python {sys.version_info[0]}.{sys.version_info[1]})"
    if tuple(sys.version_info[:2]) != tuple(python_version):
        raise ImportError(f"{built}; {here}")
    try:
        import torch
    except ImportError as error:
        raise ImportError(f"{built}; {here}, which cannot import torch: {error}") from None
    if torch.__version__ != torch_version:
        raise ImportError(f"{built}; {here}, whose torch is {torch.__version__}")
    return torch
