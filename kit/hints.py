"""hints: the commands the kit prints for its user to paste, written with the interpreter and the pybench.py the user
actually ran (on a pyenv machine a plain `python3.12` is a shim that fails unless a version is selected). Standard
library only: setup prints them before the venv exists."""

import os
import sys
from pathlib import Path

from kit.untrusted import for_shell

__all__ = ["SCRIPT", "shown", "interpreter", "command"]

SCRIPT = Path(__file__).resolve().parent.parent / "pybench.py"


def shown(path: Path | str) -> str:
    """A path as the user can paste it here (untrusted.for_shell): relative to the current folder inside it, else absolute."""
    path = Path(os.path.abspath(path))
    return for_shell(str(path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path))


def interpreter(python: Path | str | None = None) -> str:
    """An interpreter (default: the one running now) as the user can type it: its path, never a bare name (under pyenv,
    PATH's `python3.12` is a shim that fails unless a version is selected; inside, PATH leads to the version itself)."""
    text = shown(python or sys.executable)
    return text if "/" in text else f"./{text}"


def command(*words: str, python: Path | str | None = None) -> str:
    """`PYTHON pybench.py WORDS...`, pasteable: python is the interpreter running now unless given (a venv's); each word
    a constant or shown()."""
    return " ".join([interpreter(python), shown(SCRIPT), *words])
