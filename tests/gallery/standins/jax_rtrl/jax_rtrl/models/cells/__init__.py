"""Stand-in of ``jax_rtrl.models.cells`` (tests only): the registry ``ONLINE_CELL_TYPES`` of the keys the gallery
adapters use, over the stand-in :class:`~jax_rtrl.models.cells.ctrnn.OnlineCTRNNCell`."""

from functools import partial

from jax_rtrl.models.cells.ctrnn import OnlineCTRNNCell

ONLINE_CELL_TYPES = {
    **{k: partial(OnlineCTRNNCell, plasticity=k) for k in ("rtrl", "rflo", "eprop", "snap0")},
    **{f"murray_{k}": partial(OnlineCTRNNCell, plasticity=k, ode_type="murray") for k in ("rtrl", "rflo", "eprop")},
}
