"""The jaxlib whose XLA FFI headers libcake_jax.so is built against, and the jaxlib versions this
package declares (the [jax] extra of pyproject.toml states the same range; a host test checks that
they agree, and the wheel's build reads BUILT_AGAINST to pick the headers).

The check runs before jax is imported, from the installed distributions' metadata, so a wrong
jaxlib gives one ImportError naming what was found and what is needed."""

from __future__ import annotations

import re

BUILT_AGAINST = "0.11.2"
#: Declared range: MINIMUM <= jaxlib < BELOW (the XLA FFI API of one jaxlib minor series).
MINIMUM = "0.11.2"
BELOW = "0.12"
REQUIREMENT = f">={MINIMUM},<{BELOW}"


def _parse(version: str) -> tuple[int, ...]:
    """The numeric release prefix of @p version ("0.12.0rc1" -> (0, 12, 0))."""
    m = re.match(r"\d+(?:\.\d+)*", version)
    return tuple(int(p) for p in m.group(0).split(".")) if m else ()


def in_range(version: str) -> bool:
    """Whether jaxlib @p version lies in the declared range."""
    return _parse(MINIMUM) <= _parse(version) < _parse(BELOW)


def problem() -> str | None:
    """Why the installed jax/jaxlib cannot run libcake_jax.so, or None when they can."""
    from importlib import metadata

    found = {}
    for dist in ("jax", "jaxlib"):
        try:
            found[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            found[dist] = None
    need = f"jax and jaxlib {REQUIREMENT} (pip install 'cake-kernels[jax]')"
    if found["jaxlib"] is None or found["jax"] is None:
        missing = [d for d in ("jax", "jaxlib") if found[d] is None]
        verb = "are" if len(missing) > 1 else "is"
        return f"cake_jax needs {need}; {' and '.join(missing)} {verb} not installed"
    if not in_range(found["jaxlib"]):
        return (f"cake_jax's libcake_jax.so is built against the XLA FFI headers of jaxlib "
                f"{BUILT_AGAINST} and needs {need}; found jaxlib {found['jaxlib']}")
    return None
