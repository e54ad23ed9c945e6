"""DIST-style learned line assigner: fixations attend to the text's lines, then point at one.

Reference: Mercier, T. M., Budka, M., Vasilev, M. R., Kirkby, J. A., Angele, B., & Slattery, T. J. (2024).
Dual input stream transformer for vertical drift correction in eye-tracking reading data. *IEEE TPAMI*.
arXiv:2311.06095.

Idea. DIST labels every fixation of a trial with a line by a transformer over two input streams: the fixation
sequence and a picture of the page. We keep the two streams and the per-fixation labelling, and change three
things. (1) The page is given as **layout tokens**, one per text line (its vertical position in line pitches,
its rank, its horizontal extent), instead of a rendered image whose ImageNet encoder cannot be fetched offline.
(2) Fixations reach the lines by **cross-attention** (``readgaze.kernels.cross_attention``) between self-attention layers
over the fixation sequence, and the head is a **pointer**: the logit of line ``l`` for fixation ``f`` is a score
between the two streams, so any number of lines and fixations works (DIST: at most 16 lines, 500 fixations).
(3) As DIST's optional "wisdom of crowds" input, the lines chosen by a few classical algorithms enter as
per-fixation, per-line indicators whose weight the model sets per fixation (a learned, context-dependent vote).

Inputs per fixation (DIST's x, y and line-overlap, plus order and saccades), with ``P`` the line pitch:
``x`` scaled to the trial's horizontal extent, ``y`` in pitches from the first midline, the line-overlap index
(the line whose band ``midline ± P/2`` holds ``y``, -1 if none) and an in-band flag, the relative order,
``dx``/``dy`` to the previous and next fixation. Duration is not used (as in DIST).

Loss: cross-entropy over the trial's lines. DIST's ordinal CORN loss needs a fixed number of classes (16) on
a global rank scale; with a pointer head the classes are the trial's own line tokens, so cross-entropy applies
directly and no line limit is needed. We did not train an ordinal variant for comparison; what ordinal losses
buy (errors to the neighbouring line are cheaper) comes here from the line tokens' positions and the votes.

Decoding. The members label each fixation from its context, but nothing ties neighbouring labels together. As in
the hidden-Markov view of reading (a reader stays on a line, moves to the next one after a return sweep and jumps
elsewhere rarely; e.g. Cohen 2013's FixAlign run rule), the ensemble's per-fixation probabilities are taken as
(tempered) emissions of an input-output HMM over lines whose transition probabilities ``P(line change | saccade)``
depend on the incoming saccade's dx (in text widths) and dy (in pitches). The table is counted on simulated
trials, the temper ``emission_power`` chosen on simulated validation trials (``experiments/train_dist.py
--decode``); each fixation gets the line of highest posterior (forward-backward). An optional second pass (the
weights file's ``trend_power``; off in the default file) fits each line's course through the trial's drift to the
first pass's lines (one slope per trial, one intercept per line, as Cohen's 2013 parallel regression lines) and
decodes again. One slope per trial cannot follow drift that rises and recedes within a trial: on a kept-back real
trial of that kind the pass moved two and a half lines one line up.

Guard. A model fitted to simulation can be confidently wrong over whole lines on a trial unlike what it saw, and
nothing at inference says so. So dist is a *correction of the vote* of slice, cluster and warp
(:mod:`readgaze.models.dist.guard`): it keeps its own line only on at most 1 % of a trial's fixations, in runs of at
most 4 consecutive fixations, where its posterior favours its line over the vote's by at least ``e^2``; elsewhere the
vote's line stands, and a trial where dist parted from the vote over a longer run or beyond the budget is flagged
(``readgaze.lines.assign_lines`` counts such trials in its QC log). By construction dist is never more than
1 point below the vote on any trial (scored on all its fixations). ``guarded=False`` gives the decoded lines alone.
The parameters, the trend pass and the weights were chosen by leave-one-trial-out over Carr et al.'s 24 dev gold
trials plus simulated stress trials (``experiments/select_dist.py``; every fold made the same choice).

Files: ``inputs.py`` (features, votes, batching), ``network.py`` (the model, weights, probabilities),
``decoding.py`` (the HMM and the trend pass), ``guard.py`` (the vote guard), ``assign.py`` (one trial or many; the
``readgaze.line_assigners`` entry point :data:`ASSIGNER`).

Training data: simulation only (``readgaze.simulate.simulate_line_trials``), never the gold trials.

Default weights. ``dist`` runs :data:`WEIGHTS` = ``models/dist/weights/dist_stress.pt``: one member (d 32, 2 layers,
2 heads, 85 kB) trained on 3000 simulated trials, half from the default mix and half from
``experiments/train_dist.py``'s ``STRESS_MIX`` (drift that rises and recedes or tilts within a trial, return sweeps
landing between lines, skipped and re-read lines, look-backs; ``--stress-share 0.5``). Earlier files stay
reachable: :data:`ENSEMBLE_WEIGHTS` (``dist.pt``, 4 members, d 64, 3 layers, default simulation only) and
:data:`SMALL_WEIGHTS` (``dist_small.pt``, one member distilled from it with ``experiments/distill_dist.py``; Hinton,
Vinyals & Dean 2015). Both carry the trend pass; with ``weights=`` they run under the same guard.
"""

from readgaze.models.dist.assign import (ASSIGNER, THREADS_ENV, DistLineAssigner, assign_trial, assign_trials, combine,
                                         guard_lines, guard_params, posteriors, torch_threads)
from readgaze.models.dist.decoding import (DX_EDGES, DY_EDGES, MAX_JUMP, decode, fit_transitions, forward_backward,
                                           line_trends, saccade_bins, transition_matrices, trend_likelihood)
from readgaze.models.dist.guard import GUARD, MAX_SHARE, GuardReport, guard
from readgaze.models.dist.inputs import (CROWD, DEFAULT_VOTERS, N_FIXATION_FEATURES, N_LINE_FEATURES, LineBatch,
                                         classical_votes, classical_votes_many, collate, crop, prepare, prepare_many,
                                         trial_features, trial_features_many)
from readgaze.models.dist.network import (ENSEMBLE_WEIGHTS, SMALL_WEIGHTS, STRESS_WEIGHTS, WEIGHTS, WINDOW,
                                          DISTAssigner, FusionLayer, load_ensemble, predict_lines, predict_proba)

__all__ = ["ASSIGNER", "CROWD", "DEFAULT_VOTERS", "DX_EDGES", "DY_EDGES", "ENSEMBLE_WEIGHTS", "GUARD", "MAX_JUMP",
           "MAX_SHARE", "N_FIXATION_FEATURES", "N_LINE_FEATURES", "SMALL_WEIGHTS", "STRESS_WEIGHTS", "THREADS_ENV",
           "WEIGHTS", "WINDOW", "DISTAssigner", "DistLineAssigner", "FusionLayer", "GuardReport", "LineBatch",
           "assign_trial", "assign_trials", "classical_votes", "classical_votes_many", "collate", "combine", "crop",
           "decode", "fit_transitions", "forward_backward", "guard", "guard_lines", "guard_params", "line_trends",
           "load_ensemble", "predict_lines", "predict_proba", "prepare", "prepare_many", "saccade_bins",
           "torch_threads", "transition_matrices", "trend_likelihood", "trial_features", "trial_features_many"]
