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
--decode``); each fixation gets the line of highest posterior (forward-backward). A second pass then fits each
line's course through the trial's drift to the first pass's lines (one slope per trial, one intercept per line,
as Cohen's 2013 parallel regression lines), multiplies the emissions by a Gaussian likelihood of each fixation's
distance to each course (``trend_power``, also chosen on simulation) and decodes again.

Files: ``inputs.py`` (features, votes, batching), ``network.py`` (the model, weights, probabilities),
``decoding.py`` (the HMM and the trend pass), ``assign.py`` (one trial or many).

Training data: simulation only (``readgaze.simulate.simulate_line_trials``); ``experiments/train_dist.py``
trains a small ensemble (4 members, d 64, 3 layers) whose weights ship in ``models/dist/weights/dist.pt``
(:data:`ENSEMBLE_WEIGHTS`).

Default weights. ``dist`` runs :data:`WEIGHTS` = ``models/dist/weights/dist_small.pt``: one member (d 32, 2 layers,
about 1/20 of the ensemble's parameters and forward work) distilled from the ensemble's per-fixation
probabilities (Hinton, Vinyals & Dean 2015, "Distilling the knowledge in a neural network"), on the ensemble's
simulated training trials only (``experiments/distill_dist.py``); it keeps the ensemble's voters and decoding
table. It gives exactly the ensemble's lines on Carr et al.'s 24 gold trials and on the simulated checks of
``tests/test_dist_fast_paths.py``. Pass ``weights=ENSEMBLE_WEIGHTS`` for the 4-member ensemble (about 4x slower
end to end).
"""

from readgaze.models.dist.assign import (ASSIGNER, THREADS_ENV, assign_trial, assign_trials, combine, guard_lines, posteriors,
                                         torch_threads)
from readgaze.models.dist.guard import GUARD, MAX_SHARE, GuardReport, guard
from readgaze.models.dist.decoding import (DX_EDGES, DY_EDGES, MAX_JUMP, decode, fit_transitions, forward_backward,
                                         line_trends, saccade_bins, transition_matrices, trend_likelihood)
from readgaze.models.dist.inputs import (CROWD, DEFAULT_VOTERS, N_FIXATION_FEATURES, N_LINE_FEATURES, LineBatch,
                                         classical_votes, classical_votes_many, collate, crop, prepare, prepare_many,
                                         trial_features, trial_features_many)
from readgaze.models.dist.network import (ENSEMBLE_WEIGHTS, SMALL_WEIGHTS, WEIGHTS, WINDOW, DISTAssigner, FusionLayer,
                                          load_ensemble, predict_lines, predict_proba)

__all__ = ["ASSIGNER", "GUARD", "MAX_SHARE", "GuardReport", "guard", "guard_lines", "posteriors", "CROWD", "DEFAULT_VOTERS", "DX_EDGES", "DY_EDGES", "ENSEMBLE_WEIGHTS", "MAX_JUMP", "N_FIXATION_FEATURES",
           "N_LINE_FEATURES", "SMALL_WEIGHTS", "THREADS_ENV", "WEIGHTS", "WINDOW", "DISTAssigner", "FusionLayer",
           "LineBatch", "assign_trial", "assign_trials", "classical_votes", "classical_votes_many", "collate", "combine",
           "crop", "decode", "fit_transitions", "forward_backward", "line_trends", "load_ensemble", "predict_lines",
           "predict_proba", "prepare", "prepare_many", "saccade_bins", "torch_threads", "transition_matrices",
           "trend_likelihood", "trial_features", "trial_features_many"]
