"""The packaged task x model configs: found by name from any directory, listed by ``readgaze configs``.

In the repository they live in ``experiments/configs/<task>/<model>.yaml``; an installed package carries the same
files as ``models/configs/<task>/<model>.yaml`` (``setup.py`` maps the folder). :func:`find_config` turns
``reading_goal/roberteye_f`` (with or without ``.yaml``) into the file, so ``readgaze fit -c reading_goal/roberteye_f``
works outside the checkout; a path that is a file is used as it is.
"""

from __future__ import annotations

import sys
from pathlib import Path

from readgaze.errors import ConfigError

_HERE = Path(__file__).resolve().parent
ROOTS = (_HERE.parent / "experiments" / "configs",  # a checkout or an editable install
         _HERE / "configs")                          # an installed wheel
"""Folders searched, in order, for ``<task>/<model>.yaml``."""


def config_root() -> Path | None:
    """The first folder of :data:`ROOTS` that holds configs (None when the package ships none)."""
    return next((root for root in ROOTS if root.is_dir() and any(root.glob("*/*.yaml"))), None)


def list_configs() -> list[str]:
    """Names ``<task>/<model>`` of every packaged config, sorted."""
    root = config_root()
    return [] if root is None else sorted(f"{p.parent.name}/{p.stem}" for p in root.glob("*/*.yaml"))


def find_config(name: str | Path) -> Path:
    """The config file for ``name``: a path that exists, else a packaged ``<task>/<model>`` config.

    Raises
    ------
    ConfigError
        Neither a file nor a packaged config; names the closest packaged ones.
    """
    path = Path(name)
    if path.is_file():
        return path
    key = str(name).removesuffix(".yaml").replace("\\", "/")
    for root in ROOTS:
        candidate = root / f"{key}.yaml"
        if candidate.is_file():
            return candidate
        parts = key.split("/")  # experiments/configs/<task>/<model> given from outside the checkout
        if len(parts) > 2 and (root / f"{'/'.join(parts[-2:])}.yaml").is_file():
            return root / f"{'/'.join(parts[-2:])}.yaml"
    import difflib

    names = list_configs()
    close = difflib.get_close_matches(key, names, n=3, cutoff=0.4)
    hint = f"did you mean {', '.join(close)}? " if close else ""
    raise ConfigError(f"config {str(name)!r} is neither a file nor a packaged config; {hint}"
                      "'readgaze configs' lists the packaged ones")


def main(argv: list[str] | None = None) -> int:
    """``readgaze configs``: print every packaged config with its first comment line."""
    root = config_root()
    if root is None:
        print("readgaze configs: this installation ships no configs", file=sys.stderr)
        return 2
    print(f"packaged configs ({root}); use them as  readgaze fit -c <task>/<model> --data.path DATASET\n")
    for name in list_configs():
        first = (root / f"{name}.yaml").read_text(encoding="utf-8").splitlines()[:1]
        about = first[0].lstrip("# ").strip() if first and first[0].startswith("#") else ""
        print(f"  {name:<30} {about}")
    return 0
