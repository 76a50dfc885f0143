"""The dsh executable installed by the ``dsh-rs`` wheel.

``binary_path()`` is what the official SDK takes as ``dsh_bin``::

    import dsh_rs
    from deepseek_harness import DeepSeekHarness

    DeepSeekHarness(dsh_bin=dsh_rs.binary_path(), dsh_home="/tmp/dsh-home",
                    provider="scripted", model="echo")
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
from importlib import metadata as _metadata
from pathlib import Path

__all__ = ["binary_path", "__version__"]

_DISTRIBUTION = "dsh-rs"
_EXE = "dsh.exe" if os.name == "nt" else "dsh"

#: The version of the wheel, which is the version of the dsh crate in it.
__version__: str = _metadata.version(_DISTRIBUTION)


def _recorded() -> Path | None:
    """Where the installer wrote the executable, from the wheel's RECORD.

    Raises ``RuntimeError`` when the file there is no longer ours: the
    official ``deepseek-harness-runtime-bin`` installs a ``dsh`` script of its
    own into the same directory, and whichever is installed last wins.
    """
    for entry in _metadata.files(_DISTRIBUTION) or ():
        if entry.name != _EXE:
            continue
        path = Path(entry.locate())
        if not path.is_file():
            return None
        if entry.size is not None and path.stat().st_size != entry.size:
            raise RuntimeError(
                f"{path} is not the dsh-rs executable ({path.stat().st_size} bytes, dsh-rs installed "
                f"{entry.size}): another package (deepseek-harness-runtime-bin?) replaced it; "
                f"reinstall dsh-rs (pip install --force-reinstall dsh-rs) or use a separate venv"
            )
        return path
    return None


def _candidates() -> list[Path]:
    """Where pip puts a wheel's scripts: this interpreter's scheme, beside
    the interpreter (a venv), and the user scheme (``pip install --user``)."""
    places = [sysconfig.get_path("scripts"), str(Path(sys.executable).parent)]
    user_scheme = f"{os.name}_user"
    if user_scheme in sysconfig.get_scheme_names():
        places.append(sysconfig.get_path("scripts", user_scheme))
    return [Path(place) / _EXE for place in places if place]


def binary_path() -> str:
    """The absolute path of the installed ``dsh`` executable.

    Looks where the wheel's RECORD says it was installed, then where pip
    installs scripts, then on ``PATH``. Raises ``FileNotFoundError`` when
    none has one, ``RuntimeError`` when another package overwrote it.
    """
    recorded = _recorded()
    candidates = [recorded] if recorded is not None else _candidates()
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return os.path.abspath(candidate)
    found = shutil.which(_EXE)
    if found is not None:
        return os.path.abspath(found)
    raise FileNotFoundError(
        f"no {_EXE} executable beside {sys.executable} nor on PATH; is the dsh-rs wheel installed?"
    )
