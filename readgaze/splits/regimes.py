"""The evaluation regimes, named once: every module that spells a regime imports it from here.

A test (or validation) trial of a cross-validation fold is in one of three regimes (EyeBench, Shubi et al., 2025,
*EyeBench: Predictive Modeling from Eye Movements in Reading*; the OneStop decoding papers before it):

* ``new_item``: the participant is seen in training, the item (OneStop: the article) is not;
* ``new_participant``: the item is seen, the participant is not;
* ``new_item_participant``: neither.

Training trials are ``seen``; ``all`` pools a fold's evaluation trials of every regime.

>>> REGIMES
('new_item', 'new_participant', 'new_item_participant')
>>> BATCH_REGIMES.index("new_participant")  # the code ReadingBatch.regime_index carries
2
>>> regime_title("new_item_participant"), regime_title(ALL)
('New item & participant', 'All (pooled per fold)')
"""

from __future__ import annotations

REGIMES = ("new_item", "new_participant", "new_item_participant")
"""The three evaluation regimes, in reporting order."""
SEEN = "seen"
"""The regime of training trials."""
ALL = "all"
"""Every evaluation trial of a fold, pooled."""
REGIME_ORDER = (*REGIMES, ALL)
"""The rows of a results table: the three regimes, then all pooled."""
BATCH_REGIMES = (SEEN, *REGIMES)
"""The regimes in the order of the integer codes a batch carries (``ReadingBatch.regime_index``: 0 = seen)."""
UNSEEN_PARTICIPANT = ("new_participant", "new_item_participant")
"""Regimes whose participant is held out of training."""
UNSEEN_ITEM = ("new_item", "new_item_participant")
"""Regimes whose item is held out of training."""
TITLES = {"new_item": "New item", "new_participant": "New participant",
          "new_item_participant": "New item & participant", ALL: "All (pooled per fold)", SEEN: "Seen (training)"}
"""Each regime's title in tables and figures."""


def fold_roles(fold: int, n_folds: int) -> tuple[int, int]:
    """``(validation fold, test fold)`` of cross-validation fold ``fold``: validation = k, test = k + 1 (mod K).

    >>> fold_roles(9, 10)
    (9, 0)
    """
    return fold, (fold + 1) % n_folds


def regime_expr(participant_new, item_new):
    """The regime of a trial (a polars expression) from whether its participant and its item are held out of
    training (Boolean expressions): both -> ``new_item_participant``; the item -> ``new_item``; the participant ->
    ``new_participant``; neither -> ``seen``. The one statement of the regime rule (the folds' assignment and a
    model bundle scoring new data both use it)."""
    import polars as pl

    return (pl.when(participant_new & item_new).then(pl.lit("new_item_participant"))
            .when(item_new).then(pl.lit("new_item"))
            .when(participant_new).then(pl.lit("new_participant"))
            .otherwise(pl.lit(SEEN)))


def regime_title(regime: str, *, all_title: str | None = None) -> str:
    """The title of a regime in a table or figure (``all_title`` replaces the pooled row's title)."""
    if regime == ALL and all_title is not None:
        return all_title
    return TITLES.get(regime, regime)
