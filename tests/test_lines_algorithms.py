"""Each classical line-assignment method on small hand-made trials that show its characteristic behaviour."""

from __future__ import annotations

import numpy as np
import pytest

from readgaze.errors import ConfigError
from readgaze.lines import CLASSICAL, assign_trial, majority
from readgaze.lines.split import two_means_1d
from readgaze.lines.warp import dtw_cost_matrix, dtw_path

PITCH = 64.0
LINE_Y = 100.0 + PITCH * np.arange(4)                       # 4 lines: 100, 164, 228, 292
WORD_X = 100.0 + 80.0 * np.arange(10)                        # 10 words per line
WORD_XY = np.array([[x, y] for y in LINE_Y for x in WORD_X])


def reading(dy=lambda x, line: 0.0, lines=range(4)):
    """One fixation per word, line by line; y = midline + dy(x, line). Returns (xy, gold)."""
    xy = np.array([[x, LINE_Y[i] + dy(x, i)] for i in lines for x in WORD_X])
    gold = np.repeat(list(lines), len(WORD_X))
    return xy, gold


def run(method, xy, **params):
    return assign_trial(xy, LINE_Y, method, word_xy=WORD_XY, **params)


@pytest.mark.parametrize("method", CLASSICAL)
def test_every_method_is_perfect_on_clean_reading(method):
    xy, gold = reading()
    np.testing.assert_array_equal(run(method, xy), gold)


def test_attach_takes_the_nearest_midline_and_the_upper_line_on_ties():
    xy = np.array([[0, 131.0], [0, 132.0], [0, 133.0], [0, -500.0], [0, 900.0]])
    np.testing.assert_array_equal(run("attach", xy), [0, 0, 1, 0, 3])
    np.testing.assert_array_equal(run("nearest", xy), [0, 0, 1, 0, 3])


def test_uniform_downward_shift_fools_attach_but_not_the_relative_methods():
    # every fixation 40 px low: nearer the next line (pitch 64) -> attach is off by one everywhere
    xy, gold = reading(lambda x, i: 40.0)
    assert (run("attach", xy) == gold).mean() == 0.25            # only the bottom line stays right
    for method in ("slice", "segment", "merge", "warp", "regress"):
        np.testing.assert_array_equal(run(method, xy), gold, err_msg=method)
    # split and chain find the lines' fixations but place each group by its mean y, like attach; stretch
    # fits the nearer offset (+24 px, not -40 px), which also ends on the midlines one line down; compare
    # sees four lines with identical word x positions, so the nearest candidate wins every tie
    for method in ("split", "chain", "stretch", "compare"):
        np.testing.assert_array_equal(run(method, xy), run("attach", xy), err_msg=method)
    # cluster started at the midlines (eyekit's deterministic variant) leaves the top cluster empty and
    # merges the two bottom lines; random k-means++ starts (Carr et al.'s variant, the default) find the lines
    np.testing.assert_array_equal(run("cluster", xy, init="midlines"), np.minimum(gold, 2))
    np.testing.assert_array_equal(run("cluster", xy), gold)
    np.testing.assert_array_equal(run("cluster", xy, init="kmeans++", n_init=10, seed=0), gold)


def test_chain_assigns_whole_chains_by_their_mean():
    # line 0 drifts down to the right: the last 3 fixations are nearer line 1, the chain's mean is not
    xy, gold = reading(lambda x, i: 0.06 * (x - 100) if i == 0 else 0.0, lines=[0, 1])
    assert (run("attach", xy)[:10] == 1).sum() == 3
    np.testing.assert_array_equal(run("chain", xy), gold)
    # a vertical jump of more than y_thresh starts a new chain
    np.testing.assert_array_equal(run("chain", np.array([[100, 100.0], [120, 140.0]]), y_thresh=32), [0, 1])
    np.testing.assert_array_equal(run("chain", np.array([[100, 100.0], [120, 140.0]]), y_thresh=55), [0, 0])


def test_slope_drift_is_fixed_by_regress_and_merge():
    # y drifts 0.08 px per px rightwards on every line: the right half of each line sits near the next line
    xy, gold = reading(lambda x, i: 0.08 * (x - 100))
    assert (run("attach", xy) == gold).mean() < 0.8
    np.testing.assert_array_equal(run("regress", xy), gold)
    np.testing.assert_array_equal(run("merge", xy), gold)
    np.testing.assert_array_equal(run("slice", xy), gold)


def test_stretch_undoes_a_vertical_scale_and_shift():
    # y = 1.08 * (midline - 100) + 130: lines 1 and 2 land nearer the next line down
    xy, gold = reading(lambda x, i: 0.08 * (LINE_Y[i] - LINE_Y[0]) + 30.0)
    np.testing.assert_array_equal(run("attach", xy), [0] * 10 + [2] * 10 + [3] * 20)
    np.testing.assert_array_equal(run("stretch", xy), gold)
    # the same scale outside the allowed range cannot be undone
    assert (run("stretch", xy, scale_bounds=(1.0, 1.1), offset_bounds=(-5.0, 5.0)) == gold).mean() < 1.0


def test_segment_ignores_y_and_counts_return_sweeps():
    rng = np.random.default_rng(0)
    xy, gold = reading(lambda x, i: rng.normal(0, 50))           # y is useless
    np.testing.assert_array_equal(run("segment", xy), gold)
    # a long within-line regression is taken for a return sweep when a line is left unread
    xy, gold = reading(lines=[0, 1, 2])
    regress_back = np.insert(xy, 15, [[100.0, 164.0]], axis=0)
    got = run("segment", regress_back)
    assert got[16] == 2 and got.max() == 3


def test_split_finds_sweeps_by_two_means_and_keeps_short_regressions():
    xy, gold = reading()
    # short within-line regressions (-80 px) stay with the forward saccades; only -720 px sweeps cut
    xy = np.insert(xy, [4, 24], [[100 + 80 * 2, 100.0], [100 + 80 * 2, 228.0]], axis=0)
    gold = np.insert(gold, [4, 24], [0, 2])
    np.testing.assert_array_equal(run("split", xy), gold)
    np.testing.assert_array_equal(two_means_1d(np.array([5.0, -700, 6, -650, 7])),
                                  [False, True, False, True, False])
    assert not two_means_1d(np.array([3.0, 3.0])).any()


def test_cluster_orders_clusters_by_mean_y_and_can_use_kmeans_plus_plus():
    xy, gold = reading(lambda x, i: 25.0)
    np.testing.assert_array_equal(run("cluster", xy), gold)
    np.testing.assert_array_equal(run("cluster", xy, init="midlines"), gold)
    np.testing.assert_array_equal(run("cluster", xy, init="kmeans++", n_init=5, seed=1), gold)
    with pytest.raises(ConfigError, match="init"):
        run("cluster", xy, init="random")
    with pytest.raises(ConfigError, match="n_init"):
        run("cluster", xy, n_init=0)


def test_slice_drops_edge_phantoms_unless_asked_and_joins_rereading_runs():
    # only the first two lines read, both 40 px low: slice adds an empty phantom proto-line above and below
    # the two real ones. eyekit counts all four and maps them top-down, so the reading lands one line low
    # (edge_phantoms=True) even when they are only 10 px low; readgaze drops the empty edge phantoms and places
    # the two real proto-lines where their mean y fits the midlines best: 10 px from lines 0-1 (vs 54 px from
    # lines 1-2), but 24 px from lines 1-2 when they are 40 px low (the y positions cannot tell more)
    xy, gold = reading(lambda x, i: 40.0, lines=[0, 1])
    np.testing.assert_array_equal(run("slice", xy, edge_phantoms=True), gold + 1)
    np.testing.assert_array_equal(run("slice", xy), gold + 1)
    xy = reading(lambda x, i: 10.0, lines=[0, 1])[0]
    np.testing.assert_array_equal(run("slice", xy, edge_phantoms=True), gold + 1)
    np.testing.assert_array_equal(run("slice", xy), gold)
    # lines 2 and 3 read, 20 px high: the block goes to lines 2-3, not to the top lines
    xy, gold = reading(lambda x, i: -20.0, lines=[2, 3])
    np.testing.assert_array_equal(run("slice", xy), gold)
    # a reader who rereads line 0 after line 1: the reread run joins proto-line 0
    xy, gold = reading(lines=[0, 1, 0, 2, 3])
    np.testing.assert_array_equal(run("slice", xy), gold)


def test_warp_follows_the_reading_order_and_compare_matches_x_patterns():
    # a between-line regression is what warp gets wrong (it assumes reading order), slice gets right
    xy, gold = reading(lines=[0, 1, 0, 2, 3])
    assert (run("warp", xy) == gold).mean() < 1.0
    # compare: a gaze line of 3 fixations at x 100..260 fits a 3-word line better than a 10-word one
    words = np.vstack([WORD_XY[:10], [[100, 164.0], [180, 164.0], [260, 164.0]]])
    got = assign_trial(np.array([[105, 140.0], [178, 141.0], [255, 139.0]]), LINE_Y[:2], "compare", word_xy=words)
    np.testing.assert_array_equal(got, [1, 1, 1])


def test_dtw_matches_the_textbook_recursion():
    a = np.array([[0.0], [1.0], [2.0], [3.0]])
    b = np.array([[0.0], [2.0], [3.0]])
    acc = dtw_cost_matrix(a, b)
    assert acc[-1, -1] == 1.0                                  # 1 -> 0 or 2 costs 1, the rest match exactly
    i, j = dtw_path(acc)
    assert (i[0], j[0]) == (3, 2) and (i[-1], j[-1]) == (0, 0)


def test_vote_majority_breaks_ties_by_method_order_and_reports_agreement():
    line, agreement = majority(np.array([[0, 1, 1], [2, 0, 1], [3, 3, 3]]), 4)
    np.testing.assert_array_equal(line, [1, 2, 3])
    np.testing.assert_allclose(agreement, [2 / 3, 1 / 3, 1.0])
    xy, gold = reading(lambda x, i: 40.0)
    # attach is wrong everywhere, cluster and slice are right: the majority is right
    np.testing.assert_array_equal(run("vote", xy, methods=["attach", "cluster", "slice"]), gold)
    # 1-1 tie between two methods goes to the first
    np.testing.assert_array_equal(run("vote", xy, methods=["attach", "cluster"]), run("attach", xy))


def test_methods_are_deterministic_and_leave_the_input_alone():
    rng = np.random.default_rng(3)
    xy, _ = reading(lambda x, i: rng.normal(0, 12) + 0.03 * x)
    before = xy.copy()
    for method in CLASSICAL:
        np.testing.assert_array_equal(run(method, xy), run(method, xy), err_msg=method)
    np.testing.assert_array_equal(xy, before)


def test_bad_input_and_edge_cases():
    assert run("slice", np.zeros((0, 2))).shape == (0,)
    np.testing.assert_array_equal(assign_trial(np.array([[0, 5.0], [9, 700.0]]), [300.0], "merge"), [0, 0])
    assert run("attach", np.array([[150.0, 170.0]])).tolist() == [1]
    # methods that rank groups top-down put a lone fixation on the top line
    for method in ("cluster", "merge", "segment"):
        assert run(method, np.array([[150.0, 170.0]])).tolist() == [0], method
    # slice as in eyekit too; readgaze's default puts the lone proto-line on the line its y fits best
    assert run("slice", np.array([[150.0, 170.0]]), edge_phantoms=True).tolist() == [0]
    assert run("slice", np.array([[150.0, 170.0]])).tolist() == [1]
    with pytest.raises(ConfigError, match="word_xy"):
        assign_trial(np.array([[0, 100.0]]), LINE_Y, "warp")
    with pytest.raises(ConfigError, match="no_such_param"):
        assign_trial(np.array([[0, 100.0]]), LINE_Y, "slice", no_such_param=3)
    with pytest.raises(ConfigError, match="expected one of"):
        assign_trial(np.array([[0, 100.0]]), LINE_Y, "nonexistent")
    with pytest.raises(ConfigError, match=r"\(n_fixations, 2\)"):
        assign_trial(np.zeros(4), LINE_Y)
    with pytest.raises(ConfigError, match="increasing"):
        assign_trial(np.zeros((1, 2)), LINE_Y[::-1])


def test_vote_passes_each_parameter_to_the_methods_that_take_it():
    xy = np.array([[100, 100.0], [120, 140.0], [140, 141.0]])
    # y_thresh goes to chain and slice (not to attach); with 55 px the jump no longer splits the chain
    assert run("vote", xy, methods=["chain", "attach"], y_thresh=55).tolist() == [0, 0, 0]
    assert run("vote", xy, methods=["chain", "attach"]).tolist() == [0, 1, 1]
    with pytest.raises(ConfigError, match="none of the methods"):
        run("vote", xy, methods=["attach", "segment"], y_thresh=55)


def test_batched_dtw_equals_one_pair_at_a_time():
    from readgaze.lines.compare import batched_dtw_costs

    rng = np.random.default_rng(5)
    a = [rng.integers(0, 500, n).astype(float) for n in (1, 4, 9, 0)]
    b = [rng.integers(0, 500, m).astype(float) for m in (3, 7, 2, 5)]
    got = batched_dtw_costs(a, b)
    want = [dtw_cost_matrix(x[:, None], y[:, None])[-1, -1] for x, y in zip(a[:3], b[:3])]
    np.testing.assert_array_equal(got[:3], want)
    assert got[3] == np.inf
