r"""Gallery adapters for github.com/FranzKnut/jax_rtrl @ 7d95ca607d02 (Flax, MIT; issue 38).

jax_rtrl's online rules live in its ODE cells: ``jax_rtrl.models.cells.ctrnn.OnlineCTRNNCell(num_units, dt, T,
ode_type, plasticity)`` integrates :math:`\dot h = (\tanh(W [x; h; 1]) - h)/\tau` (``ode_type="murray"``,
``ctrnn_ode``) with Euler steps of ``dt`` over ``T`` and keeps the trace of ``plasticity`` (``"rtrl"``, ``"rflo"``,
``"eprop"``, ``"snap0"``) in its carry ``(h, traces, input traces)``; a ``jax.custom_vjp`` turns
:math:`\partial\ell/\partial h_t` into the parameter gradient from the trace. With :math:`\tau = 1` and
``dt = T = alpha`` one call is one Euler step, :math:`h_t = (1-\alpha) h_{t-1} + \alpha \tanh(U x_t + W h_{t-1} + b)`:
exactly the toolkit's ``leaky-elman-tanh`` cell (Murray 2019's leaky rate units; :math:`\alpha = 1` is
``elman-tanh``), with ``W = [U | W | b]`` one matrix. ``tau`` is a parameter of jax_rtrl's cell the toolkit's
problems do not have: it is held at 1 and its gradient dropped (every claim run here freezes θ). The readout
:math:`y = V h + c` and the loss :math:`\tfrac12\|y - \hat y\|^2` are the adapter's (a user's own head on the cell),
differentiated by ``jax.value_and_grad`` through jax_rtrl's custom VJP, one ``jax.jit`` per (rule, n, d, α) per
process. Float64: each factory turns on ``jax_enable_x64`` before it builds anything.

Left out, with the reason in each row: the tau-softplus and time-gated CTRNNs (``tau_softplus`` adds a learned
:math:`h_0` and a softplus time constant; ``tg`` a state-dependent time constant: no toolkit cell), LTC/LRC
(conductance-based gating :math:`\sigma(a y + b)(e - h)`: no toolkit cell), the LRU/S5 (complex diagonal linear
recurrence: no toolkit cell), the GRU (``BASE_CELL_TYPES`` marks it "TODO: fix GRU Implementation"; no online
trace).
"""

from __future__ import annotations

import sys
from types import SimpleNamespace
from typing import Any

import numpy as np

from verify.errors import NotApplicable
from verify.gallery import Entry, Repository, checkout_path
from verify.impl.adapters import Batch1

#: what ``import jax_rtrl.models.cells.ctrnn`` needs (its package imports all of jax_rtrl.models and .networks)
REQUIRES = ("jax", "flax", "chex", "distrax", "tensorflow_probability", "simple_parsing", "ml_collections")
CELLS = "cells elman-tanh and leaky-elman-tanh (CTRNN 'murray', tau = 1, dt = T = alpha)"

REPO = Repository(
    name="jax_rtrl",
    url="FranzKnut/jax_rtrl",
    commit="7d95ca607d021ef8f35bdc281a06c06222442860",
    license="MIT",
    language="jax",
    marker=("jax_rtrl/__init__.py",),
    entries=(
        Entry(
            "OnlineCTRNNCell(plasticity='rtrl')",
            "rtrl",
            "rtrl",
            claims=("rtrl.exact",),
            requires=REQUIRES,
            note=f"{CELLS}; gradients only (no influence hook). Left out: rtrl.online-convergence (needs θ "
            "updates: no set_params), rtrl.influence-balancing (its own cell), rtrl.bias-alignment (a comparison "
            "of the toolkit's estimators, minutes per algorithm on batch-1 code).",
        ),
        Entry(
            "OnlineCTRNNCell(plasticity='rflo')",
            "rtrl.rflo",
            "rflo",
            claims=("rtrl.rflo-limits",),
            requires=REQUIRES,
            note=f"{CELLS}; symmetric feedback (the gradient flows back through the readout V, no random B), as "
            "the claim asks. rtrl.bias-alignment left out (minutes on batch-1 code; its RFLO row is measured, "
            "not judged).",
        ),
        Entry(
            "OnlineCTRNNCell(plasticity='eprop')",
            "rtrl.eprop",
            "eprop",
            claims=("rtrl.eprop-limits",),
            requires=REQUIRES,
            note=f"{CELLS}; symmetric e-prop (learning signal through V). rtrl.bias-alignment left out as for RFLO.",
        ),
        Entry(
            "OnlineCTRNNCell(plasticity='snap0')",
            "rtrl.snap",
            "snap0",
            requires=REQUIRES,
            skip="SnAp-0 (J_t = I_t, the immediate Jacobian only: truncated BPTT over one step) is not a SnAp-n the "
            "claims ask for (rtrl.snap-exactness and rtrl.bias-alignment build snap(order=n), n = 1, 2; the adapter "
            "declines every n != 0); and at this commit snap0 cannot produce a gradient: its custom VJP returns a "
            "(n, n, n+d+1) gradient for W of shape (n, n+d+1), which JAX refuses (finding in "
            "reports/gallery/notes-jax_rtrl.md)",
        ),
    ),
    cite="Lemmel & Grosu 2024, Real-Time Recurrent Reinforcement Learning, arXiv:2311.04830 (jax_rtrl's README)",
)

#: compiled steps, one per (rule, n, d, alpha): built once in a process, shared by every sample and problem
_JIT: dict[tuple[Any, ...], Any] = {}


def _online(plasticity: str) -> Batch1:
    """A :class:`Batch1` over ``OnlineCTRNNCell(ode_type="murray", plasticity=...)``, one step = one Euler step."""
    import jax

    jax.config.update("jax_enable_x64", True)  # type: ignore[no-untyped-call]  # float64, before any array
    sys.path.insert(0, str(checkout_path(REPO)))
    import jax.numpy as jnp
    from jax_rtrl.models.cells.ctrnn import OnlineCTRNNCell

    def compiled(n: int, d: int, alpha: float) -> Any:
        if (OnlineCTRNNCell, plasticity, n, d, alpha) not in _JIT:
            cell = OnlineCTRNNCell(num_units=n, dt=alpha, T=alpha, ode_type="murray", plasticity=plasticity)

            def loss(p: Any, V: Any, c: Any, carry: Any, x: Any, y: Any) -> Any:
                carry, h = cell.apply(p, carry, x)
                return 0.5 * jnp.sum((V @ h + c - y) ** 2), carry

            _JIT[OnlineCTRNNCell, plasticity, n, d, alpha] = (cell, jax.jit(jax.value_and_grad(loss, (0, 1, 2), True)))
        return _JIT[OnlineCTRNNCell, plasticity, n, d, alpha]

    def make(ctx: Any) -> Any:
        (n, d), p = ctx.params["U"].shape, ctx.params
        cell, step = compiled(n, d, float(getattr(ctx.problem.cell, "alpha", 1.0)))
        params = {"params": {"W": jnp.concatenate([p["U"], p["W"], p["b"][:, None]], 1), "tau": jnp.ones(n)}}
        carry = cell.apply(params, jax.random.PRNGKey(0), (d,), method=cell.initialize_carry)
        return SimpleNamespace(step=step, p=params, V=p["V"], c=p["c"], carry=(jnp.asarray(ctx.s0), *carry[1:]))

    def step_fn(obj: Any, x: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
        (_, obj.carry), (gp, gV, gc) = obj.step(obj.p, obj.V, obj.c, obj.carry, x, y)
        gW, d = np.asarray(gp["params"]["W"]), x.shape[0]
        return {"U": gW[:, :d], "W": gW[:, d:-1], "b": gW[:, -1], "V": np.asarray(gV), "c": np.asarray(gc)}

    return Batch1(make, step_fn, cells=("elman-tanh", "leaky-elman-tanh"), state=lambda o: np.asarray(o.carry[0]))


def rtrl() -> Batch1:
    r"""jax_rtrl's RTRL (``ode.rtrl``: :math:`J_t = (I + dt\,\partial f/\partial h) J_{t-1} + dt\,\partial f/\partial
    \theta`, UORO paper eq. (4) for an Euler step) on its CTRNN: ``--impl rtrl=verify.gallery.jax_rtrl:rtrl``."""
    return _online("rtrl")


def rflo() -> Batch1:
    r"""jax_rtrl's RFLO (``ctrnn.rflo_murray``: :math:`P_t = (1 - dt/\tau) P_{t-1} + (dt/\tau)\,\phi'(a_t) [x; h; 1]^T`,
    Murray 2019's learning rule) with symmetric feedback: ``--impl rflo=verify.gallery.jax_rtrl:rflo``."""
    return _online("rflo")


def eprop() -> Batch1:
    r"""jax_rtrl's e-prop (``ctrnn.eprop_ctrnn``: RFLO's trace with each unit's own recurrence
    :math:`\alpha \phi'(a_j) W_{jj}` kept, Bellec et al. 2020 eq. (14) for rate units):
    ``--impl eprop=verify.gallery.jax_rtrl:eprop``."""
    return _online("eprop")


def snap0(order: int = 0) -> Batch1:
    r"""jax_rtrl's SnAp-0 (``ode.snap0``: the immediate Jacobian only, :math:`J_t = dt\,\partial f/\partial\theta`);
    :class:`NotApplicable` for any ``order`` other than 0 (the toolkit's SnAp-n claims ask n = 1, 2)."""
    if order != 0:
        raise NotApplicable("rtrl.snap", f"jax_rtrl has SnAp-0 only; asked for order={order}")
    return _online("snap0")
