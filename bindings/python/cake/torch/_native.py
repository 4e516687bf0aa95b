"""Loads libcake_torch_<major>.<minor>.so, Cake's operators registered from C++ (no Python on
the launch path, the norm-gate's autograd in C++), when it matches the running torch.

It is built against one PyTorch minor version (BUILT_AGAINST; bindings/torch/CMakeLists.txt
reads this line): PyTorch's C++ ABI changes between minor versions, so another torch gets the
Python operators of cake.torch._fallback instead, with one notice saying why.
"""

import os
import warnings
from typing import Optional

import torch

#: The torch version whose headers libcake_torch is compiled with (its major.minor must match).
BUILT_AGAINST = "2.11.0"


def library_name(version: str = BUILT_AGAINST) -> str:
    major, minor = version.split(".")[:2]
    return f"libcake_torch_{major}.{minor}.so"


def _candidates(cake_library: str):
    """Where the native library may be: CAKE_TORCH_LIBRARY, beside libcake.so.0 (the wheel),
    and the build folder's bindings/torch/ (libcake.so.0 in build/lib)."""
    env = os.environ.get("CAKE_TORCH_LIBRARY")
    if env:
        yield env
        return
    here = os.path.dirname(os.path.realpath(cake_library))
    yield os.path.join(here, library_name())
    yield os.path.join(here, os.pardir, "bindings", "torch", library_name())


def load(cake_library: str) -> Optional[str]:
    """Load the native operators; return the path loaded, or None (with a notice) when they
    cannot be used here. CAKE_TORCH_NATIVE=0 asks for the Python operators."""
    if os.environ.get("CAKE_TORCH_NATIVE", "1") == "0":
        return None
    running = torch.__version__.split("+")[0]
    if running.split(".")[:2] != BUILT_AGAINST.split(".")[:2]:
        warnings.warn(f"cake.torch: native operators are built for torch {BUILT_AGAINST}, this is "
                      f"torch {running}: using the Python operators (slower per call)",
                      stacklevel=3)
        return None
    tried = []
    for path in _candidates(cake_library):
        path = os.path.normpath(path)
        if os.path.exists(path):
            torch.ops.load_library(path)
            return path
        tried.append(path)
    warnings.warn("cake.torch: no " + library_name() + " (looked in " + ", ".join(tried) +
                  "): using the Python operators (slower per call)", stacklevel=3)
    return None
