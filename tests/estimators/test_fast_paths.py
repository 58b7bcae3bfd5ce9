"""Fast paths equal the generic (autograd) path to round-off: every estimator, cell, dtype and device.

* the per-step contract (``path="auto"``, the structured kernels of
  :mod:`verify.estimators.kernels`) vs ``path="generic"``, same generator: RTRL, TBPTT,
  the truncated model, UORO (rank, block), preactivation UORO; batched and unbatched;
  both losses; float64 and float32;
* the fused samplers of :mod:`verify.estimators.fused` (dense and factored θ̃, chunked,
  time-outer, rescaled) vs :func:`verify.testing.assertions.estimator_sampler` on the generic path,
  for every quantity, including every UORO mutant of the catalogs (they must keep their bugs);
* the same draws: a fast path consumes the generator exactly as the generic path does;
* CUDA: the same comparisons on the GPU (skipped with the reason where there is none).

Tolerances: the two paths evaluate the same formulas in different orders (hand-written
derivatives vs autograd, Gram-matrix norms vs direct norms, a lazily scaled θ̃ vs an explicit
one), so each output differs by round-off: a few units of u = 2⁻⁵³ (float64) / 2⁻²⁴ (float32)
per operation, grown over T ≤ 8 steps of O(1)-conditioned products and the ρ normalizers.
Measured: ≤ 1.1e-15 (float64), ≤ 2e-6 (float32); the bounds below (1e-12, 1e-4) leave a
≥ 50× margin and are ≥ 1e8 below any formula mistake (which changes results at O(1)).
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

import verify.estimators.fused as fused
from verify.errors import InvalidArgument
from verify.estimators import RTRL, TBPTT, UORO, PreactivationUORO, TruncatedModel, run_estimator
from verify.estimators.fused import fused_sampler, supports
from verify.estimators.kernels import recognized
from verify.estimators.sampling import estimator_sampler
from verify.impl.mutants import estimators as est_mutants
from verify.impl.mutants import uoro as uoro_mutants
from verify.model.cells import ElmanCell
from verify.testing.strategies import CELL_KINDS, influence_balancing_problem, random_problem

TOL = {torch.float64: 1e-12, torch.float32: 1e-4}
QUANTITIES = ("gradient", "total", "influence")


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.double().cpu(), b.double().cpu()
    den = float(torch.linalg.vector_norm(b))
    return float(torch.linalg.vector_norm(a - b)) / den if den > 0 else float(torch.linalg.vector_norm(a))


def problem(kind: str, *, batch=(), dtype=torch.float64, loss="squared-error", T=7, n=3, seed=1, device="cpu"):
    P, th = random_problem(
        kind, n=n, d=2, T=T, k=3, loss=loss, batch=batch, dtype=dtype, generator=torch.Generator().manual_seed(seed)
    )
    return P.to(device=device), th.to(device)


def generic(est):
    return dataclasses.replace(est, path="generic")


def step_estimators(kind: str):
    out = [RTRL(), TBPTT(1), TBPTT(3), TruncatedModel(2), UORO(), UORO(rank=2), UORO(block=3), UORO(block=2, rank=3)]
    if kind.startswith("elman"):
        out += [PreactivationUORO(), PreactivationUORO(rank=2)]
    return out


def compare_steps(P, th, device="cpu") -> float:
    worst = 0.0
    for est in step_estimators("elman" if isinstance(P.cell, ElmanCell) else "other"):
        g1 = torch.Generator(device=device).manual_seed(5)
        g2 = torch.Generator(device=device).manual_seed(5)
        a = run_estimator(est, P, th, g1, samples=4)
        b = run_estimator(generic(est), P, th, g2, samples=4)
        assert torch.equal(g1.get_state(), g2.get_state()), f"{est.name}: the paths consume the generator differently"
        worst = max(worst, rel(a, b))
        assert rel(a, b) <= TOL[P.dtype], f"{est.name} on {P.describe()}: fast vs generic {rel(a, b):.2e}"
    return worst


@pytest.mark.parametrize("kind", CELL_KINDS)
@pytest.mark.parametrize("batch", [(), (2,)])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_step_fast_equals_generic(kind: str, batch: tuple[int, ...], dtype: torch.dtype) -> None:
    P, th = problem(kind, batch=batch, dtype=dtype)
    compare_steps(P, th)


@pytest.mark.parametrize("kind", ["elman-tanh", "lstm", "gru"])
def test_step_fast_equals_generic_cross_entropy(kind: str) -> None:
    P, th = problem(kind, loss="cross-entropy")
    compare_steps(P, th)


def compare_sampler(est, P, th, *, steps=(2, 5, 7), m=9, device="cpu", **kw) -> list[float]:
    f, names = fused_sampler(est, P, th, steps=steps, quantities=QUANTITIES, **kw)
    g, names_g = estimator_sampler(generic(est), P, th, steps=steps, quantities=QUANTITIES)
    assert names == names_g
    A = f(m, torch.Generator(device=device).manual_seed(3))
    B = g(m, torch.Generator(device=device).manual_seed(3))
    errs = [rel(a, b) for a, b in zip(A, B, strict=True)]
    for name, a, b, e in zip(names, A, B, errs, strict=True):
        assert a.shape == b.shape and a.dtype == b.dtype and a.device == b.device, name
        assert e <= TOL[P.dtype], f"{est.name} {name} on {P.describe()}: fused vs generic {e:.2e}"
    return errs


UOROS = [UORO(), UORO(rank=2), UORO(block=3), UORO(block=2, rank=3)]


@pytest.mark.parametrize("kind", CELL_KINDS)
@pytest.mark.parametrize("batch", [(), (2,)])
@pytest.mark.parametrize("mode", ["dense", "factored"])
def test_fused_uoro_equals_generic(kind: str, batch: tuple[int, ...], mode: str) -> None:
    P, th = problem(kind, batch=batch)
    for est in UOROS:
        compare_sampler(est, P, th, chunk=4, mode=mode)


@pytest.mark.parametrize("kind", ["elman-tanh", "lstm", "gru"])
@pytest.mark.parametrize("mode", ["dense", "factored"])
def test_fused_uoro_float32(kind: str, mode: str) -> None:
    P, th = problem(kind, dtype=torch.float32)
    for est in UOROS:
        compare_sampler(est, P, th, chunk=5, mode=mode)


@pytest.mark.parametrize("kind", ["elman-tanh", "elman-relu"])
@pytest.mark.parametrize("batch", [(), (2,)])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_fused_preactivation_equals_generic(kind: str, batch: tuple[int, ...], dtype: torch.dtype) -> None:
    P, th = problem(kind, batch=batch, dtype=dtype)
    for est in (PreactivationUORO(), PreactivationUORO(rank=3)):
        compare_sampler(est, P, th, chunk=4)


@pytest.mark.parametrize("mode", ["dense", "factored"])
def test_fused_mutants_keep_their_bugs(mode: str) -> None:
    """Every UORO mutant (noise laws, normalizer rules, factors, δθ, θ̃ scale) runs fused = generic."""
    P, th = problem("gru", T=6)
    names = set()
    for m in (*est_mutants.MUTANTS, *uoro_mutants.MUTANTS):
        if m.field not in ("uoro", "preactivation") or m.name in names:
            continue
        names.add(m.name)
        est = m.part(rank=2) if m.field == "uoro" else m.part()
        Pm, thm = (P, th) if m.field == "uoro" else problem("elman-tanh", T=6)
        if m.field == "uoro":
            compare_sampler(est, Pm, thm, steps=(2, 6), mode=mode)
        else:
            compare_sampler(est, Pm, thm, steps=(2, 6))
    assert len(names) >= 17


@pytest.mark.parametrize("mode", ["dense", "factored"])
def test_fused_time_outer_and_rescale(monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    """The time-outer loop (noise table over budget) and the rescaling of the lazy scale give the same draws."""
    P, th = problem("lstm", T=9)
    monkeypatch.setattr(fused, "PREDRAW_BYTES", 0)
    compare_sampler(UORO(rank=2), P, th, steps=(3, 9), chunk=3, mode=mode)
    monkeypatch.setattr(fused, "PREDRAW_BYTES", 256 * 2**20)
    monkeypatch.setattr(fused, "_RESCALE", 1.01)  # rescale at almost every reduction
    monkeypatch.setattr(fused, "_CHECK_EVERY", 1)
    compare_sampler(UORO(rank=2, block=2), P, th, steps=(3, 8), chunk=3, mode=mode)


def test_fused_chunks_do_not_change_draws() -> None:
    P, th = problem("elman-tanh")
    outs = []
    for chunk in (1, 4, 100):
        f, _ = fused_sampler(UORO(), P, th, steps=(3, 7), quantities=QUANTITIES, chunk=chunk)
        outs.append(f(11, torch.Generator().manual_seed(0)))
    for other in outs[1:]:
        assert max(rel(a, b) for a, b in zip(outs[0], other, strict=True)) <= 1e-13


def test_fused_sampler_refuses_what_it_does_not_cover() -> None:
    P, th = influence_balancing_problem(n=4, p=2, T=5)
    assert supports(UORO(), P) is not None and recognized(P) is not None
    with pytest.raises(InvalidArgument, match="no fast path"):
        fused_sampler(UORO(), P, th, steps=(2,))
    Pe, the = problem("elman-tanh")
    assert "generic" in (supports(UORO(path="generic"), Pe) or "")
    assert supports(est_mutants.RTRLWithoutImmediateTerm(), Pe) is not None
    Pl, _ = problem("lstm")
    assert supports(PreactivationUORO(), Pl) is not None
    with pytest.raises(InvalidArgument, match="quantity"):
        fused_sampler(UORO(), Pe, the, steps=(2,), quantities=("bogus",))
    with pytest.raises(InvalidArgument, match="steps"):
        fused_sampler(UORO(), Pe, the, steps=(0,))
    with pytest.raises(InvalidArgument, match="chunk"):
        fused_sampler(UORO(), Pe, the, steps=(2,), chunk=0)


def test_path_option_is_validated_and_fast_insists() -> None:
    with pytest.raises(InvalidArgument, match="path"):
        UORO(path="turbo")
    with pytest.raises(InvalidArgument, match="path"):
        RTRL(path="")
    P, th = influence_balancing_problem(n=4, p=2, T=3)
    with pytest.raises(InvalidArgument, match="no fast path"):
        run_estimator(RTRL(path="fast"), P, th, torch.Generator())
    # auto falls back to the generic path on an unrecognized cell, and agrees with it
    a = run_estimator(RTRL(), P, th, torch.Generator())
    b = run_estimator(RTRL(path="generic"), P, th, torch.Generator())
    assert torch.equal(a, b)


def test_rtrl_mutant_goes_through_the_fast_jacobians() -> None:
    """The catalog's RTRL mutant overrides transition_jacobians; on the fast path it still drops ∂F/∂θ."""
    P, th = problem("gru")
    bad = run_estimator(est_mutants.RTRLWithoutImmediateTerm(), P, th, torch.Generator())
    bad_generic = run_estimator(est_mutants.RTRLWithoutImmediateTerm(path="generic"), P, th, torch.Generator())
    good = run_estimator(RTRL(), P, th, torch.Generator())
    assert rel(bad, bad_generic) <= 1e-12 and rel(bad, good) > 1e-3


cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")


@pytest.mark.gpu
@cuda
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("kind", CELL_KINDS)
def test_cuda_fast_equals_generic(kind: str, dtype: torch.dtype) -> None:
    P, th = problem(kind, dtype=dtype, device="cuda")
    compare_steps(P, th, device="cuda")
    for est in UOROS:
        compare_sampler(est, P, th, chunk=4, device="cuda")
    if kind.startswith("elman"):
        compare_sampler(PreactivationUORO(rank=2), P, th, device="cuda")


@pytest.mark.parametrize("kind", ["elman-tanh", "lstm", "gru"])
@pytest.mark.parametrize("mode", ["dense", "factored"])
def test_fused_projection_equals_projected_outputs(kind: str, mode: str) -> None:
    """``project=Q`` returns Qᵀ g̃ without forming the p-vectors (the GPU claim's sampler)."""
    P, th = problem(kind, T=6)
    Q = torch.randn(P.p, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    f, _ = fused_sampler(UORO(rank=2), P, th, steps=(1, 3, 6), quantities=("gradient", "total"), chunk=4, mode=mode)
    g, _ = fused_sampler(
        UORO(rank=2), P, th, steps=(1, 3, 6), quantities=("gradient", "total"), chunk=4, mode=mode, project=Q
    )
    A, B = f(10, torch.Generator().manual_seed(0)), g(10, torch.Generator().manual_seed(0))
    for a, b in zip(A, B, strict=True):
        assert b.shape == (10, 5) and rel(b, a @ Q) <= 1e-13
    with pytest.raises(InvalidArgument, match="project"):
        fused_sampler(UORO(), P, th, steps=(2,), quantities=("influence",), project=Q)
    with pytest.raises(InvalidArgument, match="project"):
        fused_sampler(UORO(), P, th, steps=(2,), project=Q[:-1])


def calls_vs_separate(est, P, th, sizes, **kw) -> float:
    """``draw_calls(sizes)`` against the calls one after the other: the same draws, the generator left alike."""
    f, _ = fused_sampler(est, P, th, steps=(2, 6), quantities=QUANTITIES, **kw)
    g1, g2 = torch.Generator().manual_seed(8), torch.Generator().manual_seed(8)
    together = f.draw_calls(sizes, g1)
    apart = [f(m, g2) for m in sizes]
    assert torch.equal(g1.get_state(), g2.get_state()), f"{est.name}: draw_calls consumes the generator differently"
    worst = 0.0
    for j, x in enumerate(together):
        y = torch.cat([a[j] for a in apart])
        assert x.shape == y.shape
        worst = max(worst, rel(x, y))
    return worst


@pytest.mark.parametrize("mode", ["dense", "factored"])
def test_draw_calls_equal_separate_calls(monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    """One pass over several calls = the calls one by one (issue 42), for the mutants too: a noise shared within a
    call stays shared within that call's rows only; in passes when the noise tables exceed the budget."""
    P, th = problem("gru", T=6)
    sizes = [5, 5, 5, 3]
    for m in (*est_mutants.MUTANTS, *uoro_mutants.MUTANTS):
        if m.field == "uoro":
            assert calls_vs_separate(m.part(rank=2), P, th, sizes, mode=mode) <= TOL[P.dtype], m.name
    Pe, the = problem("elman-tanh", T=6)
    assert calls_vs_separate(PreactivationUORO(rank=2), Pe, the, sizes) <= TOL[P.dtype]
    shared = uoro_mutants.get("uoro.noise-shared-across-samples").part()
    f, _ = fused_sampler(shared, P, th, steps=(6,), quantities=("gradient",), mode=mode)
    x = f.draw_calls(sizes, torch.Generator().manual_seed(1))[0]
    assert torch.allclose(x[0], x[4]) and not torch.allclose(x[4], x[5])  # shared within a call, not across calls
    g, _ = fused_sampler(UORO(rank=2), P, th, steps=(2, 6), quantities=QUANTITIES, mode=mode)
    row = (g.last // g.est.block) * g.est.rank * g.N * 8  # noise bytes per draw
    # budgets: one call of 5 per pass; the calls of 5 alone (time-outer) and the call of 3 predrawn; all alone
    for budget in (5 * row, 3 * row, 0):
        monkeypatch.setattr(fused, "PREDRAW_BYTES", budget)
        assert calls_vs_separate(UORO(rank=2), P, th, sizes, mode=mode) <= TOL[P.dtype]
    with pytest.raises(InvalidArgument, match="sizes"):
        f.draw_calls([3, 0], torch.Generator())


def test_power_mixture_draw_calls_equal_separate_calls() -> None:
    """The power curve's mixture of a good and a biased UORO: draw_calls = its calls one by one (issue 42)."""
    from verify.uoro.power import _Mixture

    P, th = problem("gru", T=6)
    bad = uoro_mutants.get("uoro.no-delta-theta").part()
    good, _, _ = fused.sampler_for(UORO(), P, th, steps=(6,), quantities=("total",))
    worse, _, _ = fused.sampler_for(bad, P, th, steps=(6,), quantities=("total",))
    mix = _Mixture(good, worse, 0.3)
    sizes = [4, 4, 4, 2]
    g1, g2 = torch.Generator().manual_seed(2), torch.Generator().manual_seed(2)
    together = mix.draw_calls(sizes, g1)
    apart = torch.cat([mix(m, g2) for m in sizes])
    assert torch.equal(g1.get_state(), g2.get_state())
    assert rel(together, apart) <= 1e-12 and together.shape == (14, P.p)
