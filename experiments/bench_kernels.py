"""Benchmark ``readgaze.kernels.cross_attention``: Triton kernel vs unfused PyTorch attention with a dense mask vs SDPA.

Forward + backward at OneStop shapes (batch 16, 8 heads, 800 fixations x 512 tokens, d 64), float32 and bfloat16,
with ragged lengths (texts of 384-512 tokens, trials of 480-800 fixations) and two masks:

* ``band``: each fixation sees the tokens around the one it falls on (``--band-width`` tokens, default 16), the
  PostFusion-Eye mask; the Triton kernel skips the tiles outside the band.
* ``padding``: every real token (key padding only); no tile can be skipped, so this isolates the fusion.

Each measurement runs in a fresh subprocess: time is the median of ``--repeats`` forward+backward passes after one
warm-up; memory is the peak allocated above the inputs (CUDA: ``torch.cuda.max_memory_allocated``; CPU: growth of
the peak resident set, ``ru_maxrss``, an approximation). The Triton column needs a CUDA device; on CPU it is
reported as such. Usage::

    python experiments/bench_kernels.py                 # OneStop shapes, float32 and bfloat16
    python experiments/bench_kernels.py --small         # batch 4, 400 x 256: a quick CPU run
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time

import torch

from readgaze.kernels import cross_attention
from readgaze.kernels.cross_attention import dense_mask

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
VARIANTS = ("unfused", "sdpa", "triton")


def make_inputs(batch, heads, n_fix, n_tok, d, dtype, device, band_width, seed=0):
    """Random q, k, v and a reading-like band: fixations move forward through a ragged text, with noise."""
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(batch, heads, n, d, generator=gen).to(device, dtype).requires_grad_()
               for n in (n_fix, n_tok, n_tok))
    text_tokens = torch.randint(int(0.75 * n_tok), n_tok + 1, (batch, 1), generator=gen)
    fixations = torch.randint(int(0.6 * n_fix), n_fix + 1, (batch, 1), generator=gen)
    progress = torch.arange(n_fix)[None, :] / fixations  # 0..1 over each trial's real fixations
    fixated = (progress * text_tokens + torch.randn(batch, n_fix, generator=gen) * 6).round().long()
    fixated = torch.minimum(fixated.clamp(min=0), text_tokens - 1)
    start = fixated - band_width // 2
    end = start + band_width
    padded = torch.arange(n_fix)[None, :] >= fixations
    start, end = torch.where(padded, 0, start), torch.where(padded, 0, end)  # padded fixations see nothing
    padding = torch.arange(n_tok)[None, :] < text_tokens
    return q, k, v, padding.to(device), (start.to(device), end.to(device))


def unfused_attention(q, k, v, key_padding_mask, allowed):
    """What a model file would write by hand: scores, a dense boolean mask, softmax, weighted sum."""
    mask = dense_mask(key_padding_mask, allowed, q.shape[0], q.shape[2], k.shape[2], q.device)[:, None]
    scores = (q @ k.transpose(-1, -2)) * q.shape[-1] ** -0.5
    weights = scores.masked_fill(~mask, float("-inf")).softmax(dim=-1).nan_to_num(0.0)  # empty rows -> 0
    return weights @ v


def run_variant(variant, q, k, v, padding, band):
    if variant == "unfused":
        return unfused_attention(q, k, v, padding, band)
    return cross_attention(q, k, v, padding, band, backend="reference" if variant == "sdpa" else "triton")


def _current_rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize()


def measure(variant, dtype, mask, shape, repeats, band_width, device):
    """Median forward+backward time (ms) and peak memory above the inputs (MiB) of one variant."""
    q, k, v, padding, band = make_inputs(*shape, DTYPES[dtype], device, band_width)
    if mask == "padding":
        band = None
    grad_out = torch.randn_like(q)
    step = lambda: torch.autograd.grad(run_variant(variant, q, k, v, padding, band), (q, k, v), grad_out)  # noqa: E731
    cuda = device == "cuda"
    if not cuda:
        base = _current_rss_bytes()  # before the warm-up: the CPU allocator keeps what the warm-up freed
    step()  # warm-up: Triton compilation, allocator caches
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    times = []
    for _ in range(repeats):
        begin = time.perf_counter()
        step()
        if cuda:
            torch.cuda.synchronize()
        times.append(time.perf_counter() - begin)
    if cuda:
        peak = torch.cuda.max_memory_allocated() - base
    else:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - base
    return {"ms": 1000 * statistics.median(times), "mib": max(peak, 0) / 2**20}


def _table(results, variants):
    lines = ["| mask | dtype | variant | fwd+bwd ms | peak MiB | speed-up vs unfused | memory vs unfused |",
             "| --- | --- | --- | ---: | ---: | ---: | ---: |"]
    for (mask, dtype), row in results.items():
        base = row.get("unfused")
        for variant in variants:
            got = row.get(variant)
            if got is None or "error" in got:
                reason = "needs CUDA" if got is None else got["error"]
                lines.append(f"| {mask} | {dtype} | {variant} | {reason} | | | |")
                continue
            speed = f"{base['ms'] / got['ms']:.2f}x" if base and "ms" in base else ""
            memory = f"{got['mib'] / base['mib']:.2f}x" if base and base.get("mib") else ""
            lines.append(f"| {mask} | {dtype} | {variant} | {got['ms']:.1f} | {got['mib']:.0f} | {speed} | {memory} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help="batch 4, 400 fixations x 256 tokens (quick CPU run)")
    parser.add_argument("--dtypes", nargs="+", default=list(DTYPES), choices=list(DTYPES))
    parser.add_argument("--masks", nargs="+", default=["band", "padding"], choices=["band", "padding"])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--band-width", type=int, default=16, help="tokens each fixation may see")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--worker", nargs=3, metavar=("VARIANT", "DTYPE", "MASK"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    shape = (4, 8, 400, 256, 64) if args.small else (16, 8, 800, 512, 64)
    if args.worker:
        print(json.dumps(measure(*args.worker, shape, args.repeats, args.band_width, args.device)))
        return 0
    variants = VARIANTS if args.device == "cuda" else VARIANTS[:2]
    print(f"device {args.device}, shape (batch, heads, n_fix, n_tok, d) = {shape}, band width {args.band_width}, "
          f"median of {args.repeats}, torch {torch.__version__}, {torch.get_num_threads()} threads")
    if args.device != "cuda":
        print("the Triton column needs a CUDA device: only the unfused and SDPA references run here")
    results = {}
    for mask in args.masks:
        for dtype in args.dtypes:
            for variant in variants:
                command = [sys.executable, __file__, "--worker", variant, dtype, mask, "--repeats", str(args.repeats),
                           "--band-width", str(args.band_width), "--device", args.device]
                command += ["--small"] if args.small else []
                done = subprocess.run(command, capture_output=True, text=True)
                last = done.stdout.strip().splitlines()[-1:] if done.returncode == 0 else []
                got = json.loads(last[0]) if last else {"error": f"failed: {done.stderr.strip()[-200:]}"}
                results.setdefault((mask, dtype), {})[variant] = got
                print(f"  {mask} {dtype} {variant}: {got}", flush=True)
    print(_table(results, VARIANTS))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
