"""The one fingerprint of files in readgaze: :func:`fingerprint`.

Three things key on files: a dataset folder's identity (:meth:`readgaze.Dataset.fingerprint`, by the tables' names,
sizes and modification times; ``readgaze bench`` plans units with it), the prep parse cache (the loading code, by
content: ``readgaze.data_prep.cache.code_fingerprint``) and the models' array cache (the feature definitions' source,
by content, and the dataset). All go through :func:`fingerprint`. Standard library only: the light ``readgaze prep``
start-up imports it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path


def fingerprint(files: Iterable[str | Path], *, content: bool = False, salt: object = None,
                length: int = 16) -> str:
    """Hex SHA-256 (first ``length`` digits) of files: each one's name and its bytes (``content``) or its size and
    modification time (ns); a file that does not exist counts as ``None``. ``salt`` (anything JSON can write, e.g.
    a version) is hashed first. The order of ``files`` matters: pass them sorted.

    Examples
    --------
    >>> fingerprint([], salt="v1")
    '161078e42e8fef3b'
    """
    digest = hashlib.sha256(json.dumps(salt, sort_keys=True, default=str).encode())
    for file in files:
        path = Path(file)
        digest.update(path.name.encode())
        if not path.is_file():
            digest.update(b"\0none")
        elif content:
            digest.update(path.read_bytes())
        else:
            stat = path.stat()
            digest.update(json.dumps([stat.st_size, stat.st_mtime_ns]).encode())
    return digest.hexdigest()[:length]
