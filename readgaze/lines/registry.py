"""The line-assignment methods by name: :data:`METHODS` (the 11 classical algorithms, ``nearest``, and ``vote``,
which :mod:`readgaze.lines` adds), the plugins of the entry point group ``readgaze.line_assigners``
(:func:`plugins`; e.g. ``dist`` from ``readgaze.models.dist``; readgaze never imports models), :func:`get_method`,
which looks a name up in both, and :func:`accepted_params`, the parameters a method takes.

The table lives apart from :mod:`readgaze.lines.assign` (which runs a method) so that ``vote``, which runs the
methods of the table, and :mod:`readgaze.lines.frame` import it without importing the package that re-exports them.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from importlib.metadata import entry_points

from readgaze.errors import ConfigError
from readgaze.lines.attach import attach, attach_batch
from readgaze.lines.chain import chain, chain_many
from readgaze.lines.cluster import cluster, cluster_many
from readgaze.lines.compare import compare
from readgaze.lines.merge import merge
from readgaze.lines.protocol import LAYOUT_PARAMS, LineAssigner, Method, as_assigner
from readgaze.lines.regress import regress
from readgaze.lines.segment import segment, segment_many
from readgaze.lines.slice import slice, slice_batch, slice_many  # noqa: A004 (the method's published name)
from readgaze.lines.split import split, split_many
from readgaze.lines.stretch import stretch
from readgaze.lines.warp import warp, warp_many

ENTRY_POINT_GROUP = "readgaze.line_assigners"


@cache
def plugins() -> dict[str, object]:
    """Entry points of the ``readgaze.line_assigners`` group, by name (not yet imported)."""
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def get_method(method: str | Callable | LineAssigner) -> LineAssigner:
    """The :class:`~readgaze.lines.protocol.LineAssigner` for a method name, a one-trial function or an assigner.

    Raises
    ------
    ConfigError
        If the name is neither in :data:`METHODS` nor a ``readgaze.line_assigners`` plugin, or the plugin
        fails to import or is neither a function nor a LineAssigner.
    """
    if not isinstance(method, str):
        return as_assigner(method)
    if method in METHODS:
        return METHODS[method]
    if method in plugins():
        try:
            loaded = plugins()[method].load()
        except Exception as e:  # a plugin's import error is the user's configuration problem
            raise ConfigError(f"line assigner {method!r}: its plugin failed to import ({type(e).__name__}: {e})") from e
        return as_assigner(loaded, method)
    raise ConfigError(f"line assignment method: got {method!r}, expected one of "
                      f"{sorted(METHODS) + sorted(plugins())}")


def accepted_params(method: str | Callable | LineAssigner, params: dict, *, strict: bool = True) -> dict:
    """The entries of ``params`` that ``method`` takes.

    Layout arrays (``word_xy``, ``word_line``) are dropped silently for methods that do not use them; any
    other parameter the method does not take raises :class:`ConfigError` when ``strict``.
    """
    fn = get_method(method)
    sig = fn.parameters()
    if any(p.kind is p.VAR_KEYWORD for p in sig.values()):
        return dict(params)
    unknown = [k for k in params if k not in sig and k not in LAYOUT_PARAMS]
    if unknown and strict:
        raise ConfigError(f"method {fn.name!r}: got parameter(s) {unknown}, expected some of {sorted(sig)}")
    return {k: v for k, v in params.items() if k in sig}


# The classical methods (one name per published method; "nearest" is readgaze's name for attach); ``vote`` joins
# them in readgaze/lines/__init__.py (it runs the methods of this table, so the table cannot import it).
METHODS: dict[str, Method] = {
    "attach": Method("attach", attach, batch=attach_batch),
    "chain": Method("chain", chain, many=chain_many),
    "cluster": Method("cluster", cluster, many=cluster_many),
    "compare": Method("compare", compare),
    "merge": Method("merge", merge),
    "regress": Method("regress", regress),
    "segment": Method("segment", segment, many=segment_many),
    "slice": Method("slice", slice, many=slice_many, batch=slice_batch),
    "split": Method("split", split, many=split_many),
    "stretch": Method("stretch", stretch),
    "warp": Method("warp", warp, many=warp_many),
}
CLASSICAL = ("attach", "chain", "cluster", "compare", "merge", "regress", "segment", "slice", "split",
             "stretch", "warp")
