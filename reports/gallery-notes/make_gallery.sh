#!/bin/bash
# How reports/gallery/ was made (2026-11-27, this machine: 2 cores, CPU torch 2.13, jax 0.10.2), in two
# invocations per environment, from a clean worktree of the commit that wrote it. Checkouts at the commits of
# verify/gallery/*.py's REPO declarations; SRC holds them and the extra dependencies named below.
#   snapjax: does not import on jax >= 0.5 nor without CUDA 12 -> the import shim of reports/gallery-notes/snapjax-shim
#            (names on import paths only; none is called), chex/numba installed (pip install chex numba networkx)
#   uoro-demo: QUVA-Lab/artemis @ e1700ca on PYTHONPATH, pip install six si-prefix decorator
#   jax_rtrl: pip install --target $SRC/jax_rtrl-deps --no-deps chex distrax tfp-nightly simple-parsing
#             ml-collections dm-tree docstring-parser six decorator cloudpickle gast (tensorflow-probability
#             0.25 does not import with jax 0.10; tfp-nightly does)
set -euo pipefail
SRC=${SRC:-/work/gallery-src}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$ROOT/reports/gallery}
PYTHONPATH=$ROOT:$ROOT/reports/gallery-notes/snapjax-shim python -m verify gallery \
  --checkout snapjax=$SRC/snapjax --out "$OUT"
PYTHONPATH=$ROOT:$SRC/artemis:$SRC/jax_rtrl-deps python -m verify gallery \
  --checkout fpp=$SRC/fpp --checkout uoro-demo=$SRC/uoro-demo --checkout jax_rtrl=$SRC/jax_rtrl --out "$OUT"
PYTHONPATH=$ROOT python -m verify gallery --checkout vanilla-rtrl=$SRC/vanilla-rtrl --workers 2 --out "$OUT"
