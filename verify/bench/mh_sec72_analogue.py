"""A synthetic ANALOGUE of Miller & Hardt 2019 §7.2 (arXiv:1805.10369; Wikitext-2 in the paper): report data only.

``python -m verify.bench.mh_sec72_analogue [--seed N] [--steps N] [--json PATH]``

Runs :func:`verify.rtrl.mh_sec72.run_analogue` -- (a) test loss of a tanh RNN trained unconstrained vs projected onto
‖W‖ ≤ 1 (the paper: perplexity 146.7 vs 143.5), (b) Fig. 2's ‖∂p_{t+i}/∂x_t‖ for i = 1..50 at initialisation and
after training, (c) Fig. 3's ‖W_k − W_full‖ along training for k in {2, 5, 10, 20} -- on the synthetic data of
``rtrl-sec72``, and prints them. It is not the paper's experiment: no claim is judged on it.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from verify.bench._timing import refuse_foreign_json
from verify.files import write_file_atomic
from verify.rtrl.mh_sec72 import AnalogueSetup, run_analogue

TOOL = "verify.bench.mh_sec72_analogue"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--steps", type=int, default=AnalogueSetup.steps)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    res = {"tool": TOOL, **run_analogue(AnalogueSetup(steps=args.steps, seed=args.seed))}
    res["seconds"] = time.perf_counter() - t0
    loss, sens = res["test_loss"], res["sensitivity"]
    print(f"ANALOGUE of Miller & Hardt §7.2 (synthetic, not Wikitext-2), seed {args.seed}, {res['seconds']:.0f} s")
    norms = res["spectral_norm_W"]
    print(
        f"(a) test loss: unconstrained {loss['unconstrained']:.5f} (||W|| {norms['unconstrained']:.3f}), stable "
        f"{loss['stable']:.5f} (||W|| <= 1), initial {loss['initial']:.4f}, teacher {loss['teacher']:.5f}"
    )
    for key in ("initial", "trained"):
        at = ", ".join(f"i={i} {sens[key][i - 1]:.2e}" for i in (1, 5, 10, 20, 50) if i <= len(sens[key]))
        print(f"(b) ||dp_(t+i)/dx_t|| {key}: {at}")
    dist = ", ".join(f"k={k} {v:.3g}" for k, v in res["final_distance"].items())
    print(f"(c) ||W_k - W_full|| after training: {dist}")
    if args.json:
        out = Path(args.json)
        refuse_foreign_json(out, TOOL)
        write_file_atomic(out, json.dumps(res, indent=1).encode("utf-8"))
    return res


if __name__ == "__main__":
    main()
