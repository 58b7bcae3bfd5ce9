"""Independent check of the SnAp-2 pattern snapjax @ 2958e096aa6c builds for a dense-array W (finding 1 of
reports/gallery-notes/notes-snapjax.md). Run from a checkout with the import shims::

    PYTHONPATH=reports/gallery-notes/snapjax-shim:$SNAPJAX python reports/gallery-notes/snapjax_snap_pattern.py
"""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import snapjax.algos  # noqa: E402, F401  # first: snapjax.rtrl.base imports it back (circular otherwise)
from jax.experimental.sparse import BCOO  # noqa: E402
from snapjax.cells.utils import snap_n_mask, snap_n_mask_bcoo, sparse_mask_to_mask  # noqa: E402

ring = np.zeros((4, 4))
ring[np.arange(4), (np.arange(4) - 1) % 4] = 1.0  # unit u <- unit u-1: a directed ring
dense = np.asarray(sparse_mask_to_mask(snap_n_mask(jnp.asarray(ring), 2)).jacobian_mask).reshape(4, 16)
sp = np.asarray(sparse_mask_to_mask(snap_n_mask_bcoo(BCOO.fromdense(jnp.asarray(ring)), 2)).jacobian_mask)
print("snapjax SnAp-2 mask of the ring stored dense: kept", int(dense.sum()), "of", dense.size)
print("snapjax SnAp-2 mask of the ring as BCOO (units x nonzeros): kept", int(sp.sum()), "of", sp.size, "\n", sp)
# Menick et al. 2021 §3: SnAp-2 keeps (unit u, parameter W[i, j]) when u = i or u is reached from i in one step
own = np.zeros((4, 16))
for u in range(4):
    for i in range(4):
        if u == i or ring[u, i] != 0:
            own[u, i * 4 : (i + 1) * 4] = 1
print("the paper's SnAp-2 pattern for W's 16 entries: kept", int(own.sum()), "of", own.size)
