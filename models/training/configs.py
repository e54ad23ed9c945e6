"""The packaged task x model configs: found by name from any directory, listed by ``readgaze configs``.

In the repository they live in ``experiments/configs/<task>/<model>.yaml``; an installed wheel carries the same
files as ``readgaze/configs/<task>/<model>.yaml`` (``setup.py`` maps the folder). :func:`find_config` turns
``reading_goal/roberteye_f`` (with or without ``.yaml``) into the file, so ``readgaze fit -c reading_goal/roberteye_f``
works outside the checkout; a path that is a file is used as it is.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from readgaze.errors import ConfigError

_HERE = Path(__file__).resolve().parent
ROOTS = (_HERE.parents[1] / "experiments" / "configs",  # a checkout or an editable install (models/training/ here)
         _HERE.parents[1] / "configs")                  # an installed wheel (readgaze/models/training/ here)
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
        return upgrade_class_paths(path)
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


OLD_MODULES = {
    "models.batch": "readgaze.models.data.batch", "models.features": "readgaze.features",
    "models.data": "readgaze.models.data", "models.goal_data": "readgaze.models.data.goal",
    "models.cli": "readgaze.models.training.cli", "models.cv": "readgaze.models.training.cv",
    "models.ensemble": "readgaze.models.training.ensemble", "models.registry": "readgaze.models.training.registry",
    "models.demo": "readgaze.models.demo", "models.dist": "readgaze.models.dist",
}
"""Modules of readgaze 0.1 (when ``models`` was a top-level package) that moved into a folder by role."""
_OLD_PATH = re.compile(r"(?<![\w.])(models|kernels|data_prep)\.([A-Za-z_][\w.]*)")


def upgrade_class_paths(path: Path) -> Path:
    """``path``, or for a config naming readgaze 0.1's class paths (``models.roberteye_f.RoBERTEyeF``), an upgraded
    copy in a temporary folder (``readgaze.models.roberteye_f.RoBERTEyeF``), with a warning saying how to convert
    the file for good. Since 0.2 the one installed package is ``readgaze``; its parts ``models``, ``kernels`` and
    ``data_prep`` live under it."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return path  # the config parser reports it, naming the file
    matches = [m for m in _OLD_PATH.finditer(text) if _is_class_path_line(text, m.start())]
    if not matches:
        return path
    found = sorted({m.group(0) for m in matches})

    def new(match: re.Match) -> str:
        if not _is_class_path_line(text, match.start()):
            return match.group(0)
        dotted = match.group(0)
        for old, moved in sorted(OLD_MODULES.items(), key=lambda kv: -len(kv[0])):
            if dotted == old or dotted.startswith(old + "."):
                return moved + dotted[len(old):]
        return "readgaze." + dotted

    upgraded = _OLD_PATH.sub(new, text)
    import tempfile
    import warnings

    folder = Path(tempfile.mkdtemp(prefix="readgaze-config-"))
    copy = folder / path.name
    copy.write_text(upgraded, encoding="utf-8")
    warnings.warn(f"{path}: names readgaze 0.1 class paths ({', '.join(found[:3])}); read as "
                  f"{new(matches[0])} (since 0.2 everything lives under the one package readgaze); to convert the "
                  f"file: "
                  f"sed -i 's/class_path: models\\./class_path: readgaze.models./' {path}", stacklevel=2)
    return copy


def _is_class_path_line(text: str, position: int) -> bool:
    line = text[text.rfind("\n", 0, position) + 1:position]
    return "class_path" in line


def main(argv: list[str] | None = None) -> int:
    """``readgaze configs``: print every packaged config with its first comment line."""
    root = config_root()
    if root is None:
        print("readgaze configs: this installation ships no configs", file=sys.stderr)
        return 2
    print(f"packaged configs ({root}); use them as  readgaze fit -c <task>/<model> --data.path DATASET\n")
    for name in list_configs():
        print(f"  {name:<30} {_about((root / f'{name}.yaml').read_text(encoding='utf-8'))}")
    return 0


def _about(text: str) -> str:
    """The first sentence of a config's leading comment, which may run over several lines (up to a blank comment
    line or a ``Paper:``/``Run`` line)."""
    words = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        line = line.lstrip("# ").strip()
        if not line or re.match(r"(Paper|Papers|Run|Source)\b", line):
            break
        words.append(line)
    about = " ".join(words)
    end = re.search(r"\.(\s|$)", about)
    return about[:end.start() + 1] if end else about
