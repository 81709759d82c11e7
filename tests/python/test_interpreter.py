"""An interpreter other than the one the package was built for fails at import with one line that
names what the extension was built for, instead of with whatever it trips over first."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

import tensorstream
from tensorstream import _built_for, _interpreter

BUILT_FOR = (f"tensorstream was built for {_built_for.python} (Python "
             f"{_built_for.python_version[0]}.{_built_for.python_version[1]}) with PyTorch "
             f"{_built_for.torch_version}")
HERE = f"this is {sys.executable} (Python {sys.version_info[0]}.{sys.version_info[1]})"


def test_the_build_matches_this_interpreter():
    assert tuple(sys.version_info[:2]) == _built_for.python_version
    assert torch.__version__ == _built_for.torch_version
    assert tensorstream.SafeTensorsStreamer


def test_an_interpreter_without_torch_is_named_with_the_build():
    # -S leaves out site-packages and dist-packages, where torch is: as an interpreter of its own
    # (pyenv, a virtual environment) would be.
    package_dir = os.path.dirname(os.path.dirname(tensorstream.__file__))
    environment = dict(os.environ, PYTHONPATH=package_dir)
    result = subprocess.run([sys.executable, "-S", "-c", "import tensorstream"],
                            capture_output=True, text=True, env=environment, timeout=60)
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == (
        f"ImportError: {BUILT_FOR}; {HERE}, which cannot import torch: No module named 'torch'")


def test_another_python_version_is_named_with_the_build():
    with pytest.raises(ImportError) as raised:
        _interpreter.import_torch(_built_for.python, (3, 99), _built_for.torch_version)
    assert str(raised.value) == (
        f"tensorstream was built for {_built_for.python} (Python 3.99) with PyTorch "
        f"{_built_for.torch_version}; {HERE}")


def test_another_torch_is_named_with_the_build():
    with pytest.raises(ImportError) as raised:
        _interpreter.import_torch(_built_for.python, _built_for.python_version, "0.1.0")
    assert str(raised.value) == (
        f"tensorstream was built for {_built_for.python} (Python "
        f"{_built_for.python_version[0]}.{_built_for.python_version[1]}) with PyTorch 0.1.0; "
        f"{HERE}, whose torch is {torch.__version__}")
