"""One exception family for readgaze.

Every message names where the problem is, as a person opening the file would see it:
the file, the row (1-based line number in the file, header = row 1), the column, the
value found and the value expected, e.g.::

    fixations.csv, row 418, column duration_ms: got -12, expected a positive integer

A caller catches only :class:`ReadgazeError`.

An error that a setting resolves carries that setting as data (:class:`Option`: its Python keyword and its
command-line option), not as text, so no layer rewrites another's message: the message names the keyword
(``ia_id_base=1``) when a Python caller reads it and the option (``--ia-id-base 1``) inside the ``readgaze``
command (:func:`command_spelling`).

>>> error = ConfigError("the id base is unknown", file="fix.csv",
...                     options=(Option("ia_id_base=1", "--ia-id-base 1", "Data Viewer's numbering"),))
>>> str(error)
"fix.csv: the id base is unknown: pass ia_id_base=1 (Data Viewer's numbering)"
>>> with command_spelling():
...     str(error)
"fix.csv: the id base is unknown: pass --ia-id-base 1 (Data Viewer's numbering)"
"""

from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass
from pathlib import Path

_SPELLING: contextvars.ContextVar[str] = contextvars.ContextVar("readgaze_error_spelling", default="python")


@dataclass(frozen=True)
class Option:
    """A setting that resolves an error, spelled for each caller.

    Parameters
    ----------
    python : str
        The keyword argument as a Python caller writes it (``"ia_id_base=1"``).
    cli : str, optional
        The ``readgaze`` command's option that does the same (``"--ia-id-base 1"``); None when the command has none
        (the Python spelling is shown there too).
    why : str, optional
        What it does, shown in parentheses (``"Data Viewer's own numbering"``).
    """

    python: str
    cli: str | None = None
    why: str = ""

    def spelled(self, spelling: str = "python") -> str:
        """``python`` or ``cli`` spelling, with the reason in parentheses."""
        text = self.cli if spelling == "cli" and self.cli else self.python
        return f"{text} ({self.why})" if self.why else text


@contextlib.contextmanager
def command_spelling():
    """Within this block, errors name the command's options (``--ia-id-base 1``) instead of Python keywords; the
    ``readgaze`` command runs every subcommand inside it."""
    token = _SPELLING.set("cli")
    try:
        yield
    finally:
        _SPELLING.reset(token)


class ReadgazeError(Exception):
    """Base class of every error readgaze raises on user input.

    Parameters
    ----------
    message : str
        What is wrong, with the value found and the value expected.
    file : str or Path, optional
        The input file; shown by name (the full path is kept in ``.file``).
    row : int, optional
        1-based line number in the file as an editor shows it (the header is row 1).
    column : str, optional
        The column (source name or canonical name) at fault.
    options : tuple of Option, optional
        Settings that resolve the error; the message ends with "pass A, B or C", each spelled for the caller
        (:func:`command_spelling`).
    """

    def __init__(self, message: str, *, file: str | Path | None = None, row: int | None = None,
                 column: str | None = None, options: tuple[Option, ...] = ()) -> None:
        self.message = message
        self.file = None if file is None else str(file)
        self.row = row
        self.column = column
        self.options = tuple(options)
        super().__init__(self.format("python"))

    def format(self, spelling: str = "python") -> str:
        """The message with where it happened in front and the options (``python`` or ``cli`` spelling) after."""
        where = []
        if self.file is not None:
            where.append(Path(self.file).name)
        if self.row is not None:
            where.append(f"row {self.row}")
        if self.column is not None:
            where.append(f"column {self.column}")
        text = f"{', '.join(where)}: {self.message}" if where else self.message
        if self.options:
            spelled = [o.spelled(spelling) for o in self.options]
            text += ": pass " + (spelled[0] if len(spelled) == 1 else ", ".join(spelled[:-1]) + " or " + spelled[-1])
        return text

    def __str__(self) -> str:
        return self.format(_SPELLING.get())

    def __reduce__(self):  # keep file, row, column and options across processes (cv's fold workers)
        return _rebuild, (type(self), self.message, self.file, self.row, self.column, self.options)


def _rebuild(kind, message, file, row, column, options):
    return kind(message, file=file, row=row, column=column, options=options)


class SchemaError(ReadgazeError):
    """A frame lacks a canonical column or holds it with the wrong dtype."""


class ParseError(ReadgazeError):
    """A file cannot be read as the format it claims to be."""


class ConfigError(ReadgazeError):
    """An option, column map or configuration value is invalid."""


class LeakageError(ReadgazeError):
    """A split lets a participant or item into training where the regime forbids it."""


class DataError(ReadgazeError):
    """Values are individually valid but inconsistent (duplicate keys, id bases that disagree, ...)."""
