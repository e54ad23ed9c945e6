"""How :func:`readgaze.data_prep.api.prepare` reads its keywords given as text, as ``readgaze prep`` passes them.

A keyword that the command line spells as text (``--screen-px 1280x1024``, ``--missing-value -32768``,
``--separator tab``) may come from a Python caller as a number, a pair or a list; each reader here takes either and
returns one value, or raises a :class:`readgaze.errors.ConfigError` naming the option and an example. The samples
mode's screen geometry (pixels to degrees of visual angle) is built here from its three sizes.

Like :mod:`readgaze.data_prep.api`, this module imports no polars at its top.
"""

from __future__ import annotations

from readgaze.errors import ConfigError, Option


def as_list(value) -> list[str]:
    """A keyword given as one string or several, as a list (empty for none)."""
    if not value:
        return []
    return [value] if isinstance(value, str) else list(value)


def as_text(value) -> str | None:
    """A setting as the command line gives it (``"38x30.2"``, ``"-32768"``), for the manifest."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (tuple, list)):
        return "x".join(f"{v:g}" for v in value)
    return f"{value:g}"


def screen_size(value, option: str = "--screen-px", example: str = "1280x1024") -> tuple[float, float] | None:
    """``WIDTHxHEIGHT`` text or a (width, height) pair as two floats (None for none)."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        width, height = value
        return float(width), float(height)
    try:
        w, h = (float(v) for v in value.lower().split("x"))
    except ValueError:
        raise ConfigError(f"{option} {value!r}: expected WIDTHxHEIGHT, e.g. {example}") from None
    return w, h


def screen_geometry(screen_px, screen_cm, distance_cm, origin):
    """The samples mode's :class:`readgaze.io.samples.ScreenGeometry` (every size is required)."""
    from readgaze.io.samples import ScreenGeometry

    px = screen_size(screen_px)
    if px is None or screen_cm is None or distance_cm is None:
        raise ConfigError("prep samples needs the screen (size in px and cm, eye-to-screen distance in cm) to "
                          "convert pixels to degrees of visual angle",
                          options=(Option("screen_px=(1280, 1024), screen_cm=(38, 30.2), distance_cm=68",
                                          "--screen-px 1280x1024 --screen-cm 38x30.2 --distance-cm 68",
                                          "for example"),))
    cm = screen_size(screen_cm, "--screen-cm", "38x30.2")
    return ScreenGeometry(int(px[0]), int(px[1]), *cm, distance_cm, origin=origin.replace("-", " "))


def missing_number(value) -> float | None:
    """``missing_value`` as a number or None (``"none"``: only empty fields are missing)."""
    if value is None or (isinstance(value, str) and value.lower() == "none"):
        return None
    try:
        return float(value)
    except ValueError:
        raise ConfigError(f"--missing-value {value!r}: expected a number (e.g. -32768) or 'none'") from None


def separator_char(text: str | None) -> str | None:
    """A separator by character or name (``tab``, ``comma``, ``semicolon``, ``space``)."""
    if text is None:
        return None
    named = {"tab": "\t", "\\t": "\t", "comma": ",", "semicolon": ";", "space": " "}
    value = named.get(text.lower(), text)
    if len(value) != 1:
        raise ConfigError(f"--separator {text!r}: expected one character, or tab / comma / semicolon")
    return value
