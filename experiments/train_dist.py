"""Train the DIST-style line-assigner ensemble on simulated trials only, and ship it.

    python experiments/train_dist.py --out models/dist/weights/dist.pt
    python experiments/train_dist.py --out models/dist/weights/dist.pt --calibrate   # only re-choose defer_below
    python experiments/train_dist.py --out models/dist/weights/dist.pt --decode      # only refit the sequence decoding
    python experiments/train_dist.py --out X.pt --members 1 --d-model 32 --layers 2 --heads 2 --steps 4000 \
        --stress-share 0.5                  # one small member trained directly, half the trials from STRESS_MIX

Reproducible: every trial comes from ``readgaze.simulate.simulate_line_trials`` with a fixed seed; members differ
only in their initialisation seed. Model selection uses simulated validation trials (never the gold-labelled
real trials in ``../shared/data/line_assignment``, which are only scored, once, by ``readgaze eval-lines``).
``dist``'s default weights are one member distilled from this ensemble: after retraining it, run
``experiments/distill_dist.py --out models/dist/weights/dist_small.pt`` too.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

from readgaze.models.dist import (
    DEFAULT_VOTERS,
    DX_EDGES,
    DY_EDGES,
    MAX_JUMP,
    DISTAssigner,
    collate,
    combine,
    crop,
    decode,
    fit_transitions,
    load_ensemble,
    predict_proba,
    prepare,
    torch_threads,
)
from readgaze.simulate import simulate_line_trials
from readgaze.simulate.line_events import LineEvents

CHILD_PROBABILITY = 0.3  # share of simulated trials read like beginning readers (more regressions, more noise)
# What real trials hold beyond Carr's factors (readgaze.simulate.stress): drift that rises and recedes or tilts during
# a trial, return sweeps landing between lines, skipped and re-read lines, look-backs. Three chunks with 0, 1 and 3
# look-backs. Seeds: the chunk's seed + 10000 (the stress table uses 100+, dist's selection 500+).
STRESS_MIX = dict(child_probability=CHILD_PROBABILITY, wave_pitch=(0.0, 1.2), tilt_pitch=(0.0, 0.5),
                  undershoot_probability=0.7)
STRESS_EVENTS = dict(p_skip_line=0.08, p_reread_line=0.15, p_undershoot=0.4)


def simulate_set(n_trials: int, seed: int, stress_share: float = 0.0) -> list:
    """Simulated training trials: ``1 - stress_share`` of them from the defaults, the rest from :data:`STRESS_MIX`."""
    n_stress = int(round(n_trials * stress_share))
    trials = simulate_line_trials(n_trials - n_stress, seed=seed, child_probability=CHILD_PROBABILITY)
    for k, lookbacks in enumerate((0, 1, 3)):
        size = n_stress // 3 + (k < n_stress % 3)
        trials += simulate_line_trials(size, seed=seed + 10000 + k, events=LineEvents(lookbacks=lookbacks,
                                                                                     **STRESS_EVENTS), **STRESS_MIX)
    return trials


def make_set(n_trials: int, seed: int, voters, stress_share: float = 0.0) -> list:
    return [prepare(t.xy, t.line_y_px, voters, t.true_line, t.word_xy, t.word_line)
            for t in simulate_set(n_trials, seed, stress_share)]


def accuracy(model: nn.Module, data: list, batch_size: int = 32) -> float:
    model.eval()
    hit = total = 0
    with torch.no_grad():
        for i in range(0, len(data), batch_size):
            batch = collate(data[i:i + batch_size])
            pred = model(batch).argmax(-1)
            keep = batch.target >= 0
            hit += int((pred[keep] == batch.target[keep]).sum())
            total += int(keep.sum())
    model.train()
    return hit / max(total, 1)


def train_member(train: list, val: list, seed: int, steps: int, batch_size: int, lr: float, config: dict,
                 window: int):
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    model = DISTAssigner(**config)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps, pct_start=0.1)
    loss_fn = nn.CrossEntropyLoss(ignore_index=-100)
    t0 = time.time()
    for step in range(steps):
        batch = collate([crop(train[i], window, rng) for i in rng.choice(len(train), batch_size, replace=False)])
        logits = model(batch)
        loss = loss_fn(logits.reshape(-1, logits.shape[-1]).clamp_min(-1e4), batch.target.reshape(-1))
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if (step + 1) % max(steps // 5, 1) == 0:
            print(f"  member {seed} step {step + 1}/{steps} loss {loss.item():.4f} "
                  f"val acc {100 * accuracy(model, val):.2f}% ({time.time() - t0:.0f}s)", flush=True)
    return model.eval()


def save(out: Path, config: dict, voters, members: list, args) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"config": config, "voters": list(voters),
                "members": [{k: v.half() if v.is_floating_point() else v for k, v in m.state_dict().items()}
                            for m in members],
                "trained_on": f"simulate_line_trials(n={args.n_train}, seed=1, child_probability={CHILD_PROBABILITY}"
                              f"{_stress_note(args)}); "
                              f"{args.steps} steps x "
                              f"{args.batch_size} windows of {args.window}; val seed=2"}, out)


DEFER_GRID = (None, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)


def calibrate(path: Path, val: list) -> float | None:
    """Choose ``defer_below`` on the simulated validation trials (never on gold) and write it into ``path``.

    The threshold with the highest pooled validation accuracy wins (the earliest in ``DEFER_GRID`` on ties,
    so None, never deferring, unless deferring helps).
    """
    members, voters = load_ensemble(str(path))
    if "vote" not in voters:
        return None
    with torch_threads(), torch.no_grad():
        prob = predict_proba(members, val)
    vote_col = voters.index("vote")
    best, best_acc = None, -1.0
    for tau in DEFER_GRID:
        hit = total = 0
        for p, t in zip(prob, val):
            keep = t[3] >= 0
            hit += int((combine(p, t[2][:, vote_col], tau)[keep] == t[3][keep]).sum())
            total += int(keep.sum())
        acc = hit / max(total, 1)
        print(f"  defer_below {tau}: simulated val accuracy {100 * acc:.3f}%", flush=True)
        if acc > best_acc:
            best, best_acc = tau, acc
    blob = torch.load(path, map_location="cpu", weights_only=False)
    blob["defer_below"] = best
    torch.save(blob, path)
    print(f"defer_below = {best} written to {path}")
    return best


POWER_GRID = (None, 0.35, 0.5, 0.7, 1.0)
TREND_GRID = (0.0, 0.25, 0.5, 1.0, 2.0)


def fit_decode(path: Path, train: list, val: list) -> dict | None:
    """Fit the HMM's transition table on the simulated training trials, then choose on the simulated validation
    trials (never on gold), by pooled accuracy: first ``emission_power`` (None: no decoding, the plain ensemble
    with its ``defer_below``), then ``trend_power`` (0: no second pass). Writes both into ``path``.
    """
    members, voters = load_ensemble(str(path))
    blob = torch.load(path, map_location="cpu", weights_only=False)
    table = fit_transitions(train)
    with torch_threads(), torch.no_grad():
        prob = predict_proba(members, val)
    features = [t[0] for t in val]
    vote = [t[2][:, voters.index("vote")] if "vote" in voters else None for t in val]

    def accuracy(lines) -> float:
        hit = sum(int((got[t[3] >= 0] == t[3][t[3] >= 0]).sum()) for got, t in zip(lines, val))
        return hit / max(sum(int((t[3] >= 0).sum()) for t in val), 1)

    best, best_acc = None, -1.0
    for power in POWER_GRID:
        acc = accuracy([combine(p, v, blob.get("defer_below")) for p, v in zip(prob, vote)] if power is None else
                       [q.argmax(axis=1) for q in decode(prob, features, table, power)])
        print(f"  emission_power {power}: simulated val accuracy {100 * acc:.3f}%", flush=True)
        if acc > best_acc:
            best, best_acc = power, acc
    trend = 0.0
    if best is not None:
        for gamma in TREND_GRID[1:]:
            acc = accuracy([q.argmax(axis=1) for q in decode(prob, features, table, best, gamma)])
            print(f"  trend_power {gamma}: simulated val accuracy {100 * acc:.3f}%", flush=True)
            if acc > best_acc:
                trend, best_acc = gamma, acc
    blob["decode"] = None if best is None else {
        "transitions": torch.from_numpy(table), "emission_power": best, "trend_power": trend,
        "dx_edges": list(DX_EDGES), "dy_edges": list(DY_EDGES), "max_jump": MAX_JUMP,
        "fitted_on": f"transitions counted on the {len(train)} simulated training trials (seed 1); powers chosen on "
                     f"{len(val)} simulated val trials (seed 2)"}
    torch.save(blob, path)
    print(f"emission_power = {best}, trend_power = {trend} written to {path} "
          f"(simulated val accuracy {100 * best_acc:.3f}%)")
    return blob["decode"]


def _stress_note(args) -> str:
    return (f"; {args.stress_share:.0%} of trials from STRESS_MIX {STRESS_MIX} with events {STRESS_EVENTS}"
            if getattr(args, "stress_share", 0.0) else "")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=Path("models/dist/weights/dist.pt"))
    p.add_argument("--n-train", type=int, default=3000)
    p.add_argument("--n-val", type=int, default=300)
    p.add_argument("--members", type=int, default=4)
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--d-model", type=int, default=64)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--stress-share", type=float, default=0.0,
                   help="share of simulated trials drawn from STRESS_MIX (waves, tilts, undershoot, line events)")
    p.add_argument("--window", type=int, default=192, help="training crops windows of this many fixations")
    p.add_argument("--dropout", type=float, default=0.0)
    p.add_argument("--cache", type=Path, default=None, help="reuse the prepared simulated trials from this file")
    p.add_argument("--threads", type=int, default=1, help="torch threads (1 avoids oversubscription on shared CPUs)")
    p.add_argument("--calibrate", action="store_true",
                   help="only choose defer_below for the ensemble at --out on the simulated val trials")
    p.add_argument("--no-votes", action="store_true", help="train without the classical votes input")
    p.add_argument("--decode", action="store_true",
                   help="only fit the sequence decoding (HMM over lines) for the ensemble at --out")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    voters = () if args.no_votes else DEFAULT_VOTERS
    t0 = time.time()
    if args.cache is not None and args.cache.exists():
        train, val = torch.load(args.cache, weights_only=False)
    else:
        train = make_set(args.n_train, seed=1, voters=voters, stress_share=args.stress_share)
        val = make_set(args.n_val, seed=2, voters=voters, stress_share=args.stress_share)
        if args.cache is not None:
            torch.save((train, val), args.cache)
    print(f"simulated + prepared {len(train)} train / {len(val)} val trials in {time.time() - t0:.0f}s")
    if args.calibrate:
        calibrate(args.out, val)
        return
    if args.decode:
        fit_decode(args.out, train, val)
        return
    config = dict(d_model=args.d_model, n_heads=args.heads, n_layers=args.layers, n_voters=len(voters),
                  dropout=args.dropout)
    members = []
    for seed in range(args.members):  # the file is rewritten after each member, so a long run can be stopped
        members.append(train_member(train, val, seed, args.steps, args.batch_size, args.lr, config, args.window))
        print(f"member {seed}: simulated val accuracy {100 * accuracy(members[-1], val):.2f}%", flush=True)
        save(args.out, config, voters, members, args)
    calibrate(args.out, val)
    fit_decode(args.out, train, val)
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.2f} MB) in {time.time() - t0:.0f}s")


if __name__ == "__main__":
    main()
