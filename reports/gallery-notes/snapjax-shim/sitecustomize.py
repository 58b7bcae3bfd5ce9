"""SHIM, not snapjax's code: lets snapjax @ 2958e096aa6c import on jax 0.10.2 on a CPU machine, for the gallery's
real runs (reports/gallery-notes/notes-snapjax.md). Every name it provides is on an import path only; none is called on
the dense path the adapters use (each raises if it is):

* ``jax._src.api._vjp`` -- a private JAX function removed after jax 0.4.x, imported by ``snapjax/sp_jacrev.py``
  (used by its sparse Jacobian projections only);
* ``snapjax.spp_primitives.primitives`` -- snapjax's CUDA primitive (``sp_ops*.so`` links ``libcusparse.so.12``,
  and the module imports ``jax.lib.xla_client``, removed from JAX, and numba), used only for BCOO (sparse) traces.

With ``chex/`` (two type aliases) and ``numba/`` (names only) beside it, put this folder first on PYTHONPATH.
"""

import sys
import types

import jax._src.api as _api

if not hasattr(_api, "_vjp"):

    def _vjp(*args: object, **kwargs: object) -> None:
        raise RuntimeError("shim: jax._src.api._vjp (removed from jax) is used only by snapjax's sparse projections")

    _api._vjp = _vjp  # type: ignore[attr-defined]


def spp_csr_matmul(*args: object, **kwargs: object) -> None:
    raise RuntimeError("shim: snapjax's CUDA cuSPARSE primitive (sp_ops, libcusparse.so.12) is not available")


_prim = types.ModuleType("snapjax.spp_primitives.primitives")
_prim.spp_csr_matmul = spp_csr_matmul  # type: ignore[attr-defined]
sys.modules["snapjax.spp_primitives.primitives"] = _prim
