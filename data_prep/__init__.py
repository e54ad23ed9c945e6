"""``readgaze prep``: lab data (Data Viewer or OneStop reports, EyeLink ``.asc``, gaze-sample CSVs) -> a dataset folder.

:func:`prepare` (``readgaze.prepare``) is the entry point; the modules are its steps: ``sources`` (one loader per
mode), ``columns`` (column maps), ``labels`` (a labels table joined to the trials), ``pipeline`` (clean, lines,
words, measures, features), ``dataset`` (the folder's writer), ``cache`` (reuse of a parse) and ``cli`` (the
command's options).
"""


def __getattr__(name: str):
    if name in ("prepare", "PrepResult"):  # imported on first use: the command starts file passes before polars
        from readgaze.data_prep import api

        return getattr(api, name)
    raise AttributeError(f"module 'readgaze.data_prep' has no attribute {name!r}")


__all__ = ["PrepResult", "prepare"]
