"""readgaze: eye tracking in reading, from lab exports to reading-goal and comprehension decoding."""

__version__ = "0.1.0"

from readgaze.errors import ReadgazeError  # noqa: E402
from readgaze.schema import validate  # noqa: E402

__all__ = ["ReadgazeError", "validate", "__version__"]
