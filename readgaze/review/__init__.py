"""``readgaze review DATASET``: a local web page to inspect trials, correct line assignment and exclude trials.

The server (:mod:`readgaze.review.server`, Starlette + uvicorn, the ``review`` extra) binds 127.0.0.1 only and
refuses any request without the random token in the URL it prints. The page (plain HTML/SVG/JS in ``static/``,
no build step) lists the trials worst line agreement first and draws one trial at a time; every correction is
appended at once to the dataset's ``corrections.parquet`` (:mod:`readgaze.corrections`), which ``readgaze prep``
and ``readgaze assign-lines`` re-apply.
"""
