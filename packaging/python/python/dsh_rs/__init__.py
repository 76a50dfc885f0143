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
from importlib.metadata import version as _distribution_version
from pathlib import Path

__all__ = ["binary_path", "__version__"]

#: The version of the wheel, which is the version of the dsh crate in it.
__version__: str = _distribution_version("dsh-rs")

_EXE = "dsh.exe" if os.name == "nt" else "dsh"


def _candidates() -> list[Path]:
    """Where pip puts the wheel's scripts: this interpreter's scheme, beside
    the interpreter (a venv), and the user scheme (``pip install --user``)."""
    places = [sysconfig.get_path("scripts"), str(Path(sys.executable).parent)]
    user_scheme = f"{os.name}_user"
    if user_scheme in sysconfig.get_scheme_names():
        places.append(sysconfig.get_path("scripts", user_scheme))
    return [Path(place) / _EXE for place in places if place]


def binary_path() -> str:
    """The absolute path of the installed ``dsh`` executable.

    Looks where pip installs the wheel's executable, then on ``PATH``.
    Raises ``FileNotFoundError`` when neither has one.
    """
    for candidate in _candidates():
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate.absolute())
    found = shutil.which(_EXE)
    if found is not None:
        return str(Path(found).absolute())
    raise FileNotFoundError(
        f"no {_EXE} executable beside {sys.executable} nor on PATH; is the dsh-rs wheel installed?"
    )
