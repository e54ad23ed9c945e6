"""readgaze: eye tracking in reading, from lab exports to reading-goal and comprehension decoding."""

__version__ = "0.1.0"

from readgaze.errors import ReadgazeError  # noqa: E402
from readgaze.io import read_fixation_report, read_ia_report  # noqa: E402
from readgaze.schema import validate  # noqa: E402

__all__ = ["ReadgazeError", "read_fixation_report", "read_ia_report", "validate", "__version__"]
