"""One exception family for readgaze.

Every message names where the problem is, as a person opening the file would see it:
the file, the row (1-based line number in the file, header = row 1), the column, the
value found and the value expected, e.g.::

    fixations.csv, row 418, column duration_ms: got -12, expected a positive integer

A caller catches only :class:`ReadgazeError`.
"""

from __future__ import annotations

from pathlib import Path


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
    """

    def __init__(self, message: str, *, file: str | Path | None = None, row: int | None = None,
                 column: str | None = None) -> None:
        self.message = message
        self.file = None if file is None else str(file)
        self.row = row
        self.column = column
        super().__init__(self._format())

    def _format(self) -> str:
        where = []
        if self.file is not None:
            where.append(Path(self.file).name)
        if self.row is not None:
            where.append(f"row {self.row}")
        if self.column is not None:
            where.append(f"column {self.column}")
        return f"{', '.join(where)}: {self.message}" if where else self.message


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
