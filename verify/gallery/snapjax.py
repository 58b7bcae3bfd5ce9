r"""Gallery adapters for github.com/kevinlopezandrade/snapjax @ 2958e096aa6c: RTRL and SnAp-n through the JAX route.

snapjax (equinox) keeps the influence of an RTRL cell's state on its parameters, :math:`J_t = I_t + D_t J_{t-1}`
(``snapjax.algos.update_cell_jacobians``: ``I_t`` = ∂h_t/∂θ and ``D_t`` = ∂h_t/∂h_{t-1} by ``jax.jacrev`` of the
cell's ``f``: the Jacobians of the *state* h, not of a preactivation), and SnAp-n (Menick et al. 2021,
arXiv:2006.07232, §3) as :math:`J_t = M_n \odot (I_t + D_t J_{t-1})` with the mask of ``model.get_snap_n_mask(n)``
(``snapjax.algos.compute_masked_jacobian``). Its cell ``snapjax.cells.rnn.RNN`` is
:math:`h_t = \tanh(W_{hh} h_{t-1} + b + W_{ih} x_t)` -- the bias lives in ``weights_hh`` (an ``eqx.nn.Linear``)
-- which is the toolkit's ``elman-tanh`` (W = weights_hh.weight, b = weights_hh.bias, U = weights_ih.weight).
The adapter builds the model ``StackedCell([IdentityLayer(RNN), eqx.nn.Linear(n, k)])`` (the linear readout with
bias is a non-RTRL layer: its gradient is snapjax's exact "spatial" gradient) and steps it with
``RTRLExact.step`` (RTRL) or ``RTRLApprox.step(..., jacobian_mask=densify_jacobian_mask(model.get_snap_n_mask(n)))``
(SnAp-n, the dense-mask path of snapjax's own tests) under the loss :math:`\tfrac12\|y - \hat y\|^2` passed as
``loss_func`` (snapjax's ``l2`` has no ½). ``jax_enable_x64`` is turned on by the adapter (the toolkit's references
are float64).

Not run: snapjax's BPTT (``snapjax.bptt``) is an offline gradient over a whole sequence, not an online estimator;
its GRU (``snapjax.cells.gru.GRU``: :math:`a = \tanh(W_{ia} x + r\odot(W_{ha} h + b_a))`, :math:`h' = (1-z) h + z a`)
is not the toolkit's ``gru`` (:math:`\tanh(U_n x + r\odot(W_n h) + b_n)`, :math:`h' = (1-z)\tilde h + z h`): the
bias inside the reset product has no toolkit counterpart, and the swapped z is a sign reparameterization that a
name mapping cannot express; its LRU, continuous-time and PTA cells have no toolkit cell either.

Reproduce one row (a checkout and its dependencies: jax, equinox, chex, jaxtyping, numba, optax, networkx)::

    RNN_VERIFY_GALLERY_SNAPJAX=~/src/snapjax rnn-verify run --impl rtrl=verify.gallery.snapjax:rtrl --impl-only
    RNN_VERIFY_GALLERY_SNAPJAX=~/src/snapjax rnn-verify run --impl snap=verify.gallery.snapjax:snap --impl-only
"""

from __future__ import annotations

import sys
from typing import Any

from verify.gallery import Entry, Repository, checkout_path
from verify.impl.jax_route import JaxStep  # imports no jax until a JaxStep is built

_REQUIRES = ("jax", "equinox", "chex", "jaxtyping", "numba", "optax", "networkx")

REPO = Repository(
    name="snapjax",
    url="kevinlopezandrade/snapjax",
    commit="2958e096aa6cbab21556590d7009f5c83cc7bc67",
    license="none stated (no license file)",
    language="jax",
    marker=("snapjax/rtrl/base.py",),
    entries=(
        Entry(
            "RTRLExact",
            "rtrl",
            "rtrl",
            claims=("rtrl.exact", "rtrl.bias-alignment"),
            requires=_REQUIRES,
            note=(
                "elman-tanh only (snapjax.cells.rnn.RNN); the claims' other cells are left out. snapjax does not "
                "import on jax >= 0.5 (jax._src.api._vjp, jax.lib.xla_client removed) nor without CUDA 12 "
                "(snapjax.algos loads sp_ops*.so, linked to libcusparse.so.12): the rows ran with "
                "reports/gallery-notes/snapjax-shim first on PYTHONPATH, names on import paths only, none called"
            ),
            truth="float64 reverse-mode influence matrices and per-step BPTT gradients of the toolkit: 1.7e-16 apart",
            findings=(
                "import snapjax.rtrl.base fails with a circular ImportError unless snapjax.algos is imported first",
            ),
        ),
        Entry(
            "RTRLApprox + get_snap_n_mask(n)",
            "rtrl.snap",
            "snap",
            claims=("rtrl.snap-exactness", "rtrl.bias-alignment"),
            requires=_REQUIRES,
            note="the dense-mask path of snapjax's own tests (densify_jacobian_mask); imports as RTRLExact's row",
            truth=(
                "snapjax's own mask functions called directly (reports/gallery-notes/snapjax_snap_pattern.py): on the "
                "4-unit ring at n = 2 the dense array keeps 64 of 64 influence entries, its BCOO path 8 of 16, "
                "Menick et al. 2021 Sec. 3 keeps 32 of 64; the toolkit's numpy SnAp PASSes the same claim"
            ),
            findings=(
                "SnAp-n for n >= 2 on a weight array stored dense ignores the array's zeros (snap_n_mask_dijkstra "
                "builds the graph from np.ones(W.shape)): on a sparse W it is RTRL (error 1.4e-16 where SnAp-2 is "
                "biased), not SnAp-n -- a convention (sparsity must be declared as BCOO), which rtrl.snap-exactness "
                "FAILs; SnAp-1 is unaffected",
            ),
        ),
    ),
    cite=(
        'Menick et al. 2021, "Practical Real Time Recurrent Learning with a Sparse Approximation", '
        "ICLR, arXiv:2006.07232 (SnAp)"
    ),
)


def _api() -> Any:
    """The checkout's modules (``snapjax.algos`` first: ``snapjax.rtrl.base`` imports it back)."""
    sys.path[:0] = [p for p in [str(checkout_path(REPO))] if p not in sys.path]
    import jax

    jax.config.update("jax_enable_x64", True)  # type: ignore[no-untyped-call]
    import equinox as eqx
    from snapjax import algos
    from snapjax.cells import readout, rnn, stacked, utils

    return jax, eqx, algos, rnn.RNN, readout.IdentityLayer, stacked.StackedCell, utils.densify_jacobian_mask


def _cell(c: Any) -> dict[str, Any]:
    """An RNN-shaped pytree (gradient or trace) in the toolkit's names: W, b in weights_hh, U = weights_ih."""
    return {"W": c.weights_hh.weight, "b": c.weights_hh.bias, "U": c.weights_ih.weight}


def _wrap(algorithm: str, order: int | None, name: str) -> Any:
    jax, eqx, algos, RNN, Identity, Stacked, densify = _api()
    algo = getattr(algos, algorithm)(loss_func=lambda y, y_hat, mask: 0.5 * ((y - y_hat) ** 2).sum())  # no 1/2 in l2

    def model(p: dict[str, Any]) -> Any:
        key = jax.random.PRNGKey(0)  # any: every array of the model is replaced by theta's
        m = Stacked([Identity(RNN(*p["U"].shape, key=key)), eqx.nn.Linear(*p["V"].shape[::-1], key=key)])
        where = lambda m: (*_cell(m.layers[0].cell).values(), m.layers[1].weight, m.layers[1].bias)  # noqa: E731
        return eqx.tree_at(where, m, (p["W"], p["b"], p["U"], p["V"], p["c"]))

    def step(p: dict[str, Any], c: dict[str, Any], x: Any, y: Any, _key: Any) -> Any:
        m = model(p)
        mask = None if order is None else densify(m.get_snap_n_mask(order))
        h, g, J, *_ = algo.step(m, c["J"], (c["h"],), x, y, 1.0, jacobian_mask=mask)
        return {"h": h[0], "J": J}, _cell(g.layers[0].cell) | {"V": g.layers[1].weight, "c": g.layers[1].bias}

    init = lambda p, s0, _k: {"h": s0, "J": algo.init_traces(model(p))}  # noqa: E731
    influence = lambda c: _cell(c["J"].layers[0].cell[-1])  # noqa: E731  # dh_t/dtheta, (n, size) per parameter
    return JaxStep(init, step, state=lambda c: c["h"], influence=influence, name=name)


def rtrl() -> Any:
    """snapjax's exact RTRL (``RTRLExact``) on its Elman-tanh ``RNN``, through the JAX route."""
    return _wrap("RTRLExact", None, "snapjax RTRLExact")


def snap(order: int = 1) -> Any:
    """snapjax's SnAp-n: ``RTRLApprox`` with the dense mask of ``get_snap_n_mask(order)``."""
    return _wrap("RTRLApprox", order, f"snapjax SnAp-{order}")
