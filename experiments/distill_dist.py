"""Distil the shipped DIST-style ensemble (4 members) into one small member, on simulated trials only.

    python experiments/distill_dist.py --out models/dist/weights/dist_small.pt --cache /tmp/dist_cache.pt

Knowledge distillation (Hinton, Vinyals & Dean 2015, arXiv:1503.02531): the student is trained on the teacher's
per-fixation line probabilities (the ensemble read exactly as ``readgaze.models.dist.predict_proba`` reads a trial,
windows included) instead of the gold lines, with a cross-entropy to those soft targets, on random windows of
the same simulated training trials the members were trained on (``experiments/train_dist.py``'s seed 1). The
student keeps the teacher's voters and its decoding step (transition table and powers, copied unchanged), so
the file is a one-member ensemble that ``readgaze.models.dist.assign_trials(..., weights=FILE)`` reads as it reads the
shipped one. The script prints both models' errors after decoding on the simulated validation trials (seed 2)
and on a second simulated set (seed 3); nothing is chosen on the gold trials.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

from readgaze.models.dist import (
    ENSEMBLE_WEIGHTS,
    DISTAssigner,
    collate,
    decode,
    load_ensemble,
    predict_proba,
    prepare_many,
    torch_threads,
)
from readgaze.models.dist.decoding import _decoder
from readgaze.simulate import simulate_line_trials

try:
    from train_dist import CHILD_PROBABILITY, make_set
except ImportError:                                   # run as python -m experiments.distill_dist
    from experiments.train_dist import CHILD_PROBABILITY, make_set


def distil(train: list, teacher: list[np.ndarray], config: dict, steps: int, batch_size: int, lr: float,
           window: int, seed: int = 0) -> DISTAssigner:
    """Train one student on random windows of ``train`` against the teacher's probabilities ``teacher``."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    student = DISTAssigner(**config)
    opt = torch.optim.AdamW(student.parameters(), lr=lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps, pct_start=0.1)
    t0 = time.time()
    for step in range(steps):
        pieces, soft = [], []
        for i in rng.choice(len(train), batch_size, replace=False):
            fix, lines, votes, target = train[i][:4]
            s = int(rng.integers(0, max(len(fix) - window, 0) + 1))
            pieces.append((fix[s:s + window], lines, votes[s:s + window], target[s:s + window], s))
            soft.append(teacher[i][s:s + window])
        batch = collate(pieces)
        log_p = torch.log_softmax(student(batch).clamp_min(-1e4), dim=-1)                    # B F L
        q = torch.zeros_like(log_p)
        for b, p in enumerate(soft):
            q[b, :p.shape[0], :p.shape[1]] = torch.from_numpy(p).float()
        loss = -(q * log_p).sum(-1)[batch.fixation_mask].mean()
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(student.parameters(), 1.0)
        opt.step()
        sched.step()
        if (step + 1) % max(steps // 5, 1) == 0:
            print(f"  step {step + 1}/{steps} soft cross-entropy {loss.item():.4f} ({time.time() - t0:.0f}s)",
                  flush=True)
    return student.eval()


def decoded_errors(members: list, data: list, decoder: dict) -> tuple[int, int]:
    """Fixations whose decoded line differs from the gold one, and scored fixations, on prepared trials."""
    with torch_threads(), torch.inference_mode():
        prob = predict_proba(members, data, 48)
    lines = [p.argmax(axis=1) for p in decode(prob, [t[0] for t in data], **decoder)]
    err = sum(int((got[t[3] >= 0] != t[3][t[3] >= 0]).sum()) for got, t in zip(lines, data))
    return err, sum(int((t[3] >= 0).sum()) for t in data)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=Path("models/dist/weights/dist_small.pt"))
    p.add_argument("--teacher", default=None, help="ensemble file (default: the shipped models/dist/weights/dist.pt)")
    p.add_argument("--cache", type=Path, default=None, help="prepared simulated trials (train_dist.py --cache)")
    p.add_argument("--n-train", type=int, default=3000)
    p.add_argument("--n-val", type=int, default=300)
    p.add_argument("--d-model", type=int, default=32)
    p.add_argument("--heads", type=int, default=2)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--steps", type=int, default=5000)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--window", type=int, default=192)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    members, voters = load_ensemble(args.teacher or str(ENSEMBLE_WEIGHTS))   # dist's default is the student itself
    decoder = _decoder(args.teacher or str(ENSEMBLE_WEIGHTS))
    if args.cache is not None and args.cache.exists():
        train, val = torch.load(args.cache, weights_only=False)
    else:
        train = make_set(args.n_train, seed=1, voters=voters)
        val = make_set(args.n_val, seed=2, voters=voters)
        if args.cache is not None:
            torch.save((train, val), args.cache)
    with torch_threads(), torch.inference_mode():
        teacher = predict_proba(members, train, 48)
    config = dict(d_model=args.d_model, n_heads=args.heads, n_layers=args.layers, n_voters=len(voters), dropout=0.0)
    student = distil(train, teacher, config, args.steps, args.batch_size, args.lr, args.window)
    blob = torch.load(args.teacher or Path(__file__).resolve().parents[1] / "models" / "weights" / "dist.pt",
                      map_location="cpu", weights_only=False)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"config": config, "voters": list(voters), "members": [student.state_dict()],
                "decode": blob["decode"],
                "trained_on": f"distilled from {args.teacher or 'models/dist/weights/dist.pt'} "
                              f"({len(members)} members) on "
                              f"simulate_line_trials(n={len(train)}, seed=1, child_probability={CHILD_PROBABILITY}); "
                              f"{args.steps} steps x {args.batch_size} windows of {args.window}, soft targets; "
                              "decode copied from the teacher"}, args.out)
    second = simulate_line_trials(600, seed=3, child_probability=CHILD_PROBABILITY)
    second = prepare_many([(t.xy, t.line_y_px, t.word_xy, t.word_line) for t in second], voters,
                          [t.true_line for t in second])
    for name, data in (("val (seed 2)", val), ("second set (seed 3)", second)):
        for label, ms in (("teacher", members), ("student", [student])):
            err, n = decoded_errors(ms, data, decoder)
            print(f"{name} {label}: {err} errors in {n} fixations ({100 - 100 * err / n:.3f} %)", flush=True)


if __name__ == "__main__":
    main()
