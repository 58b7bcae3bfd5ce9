"""STAND-IN for github.com/kevinlopezandrade/snapjax (rnn-verify's tests; not snapjax's code): the public API's
shape that ``verify.gallery.snapjax`` calls -- ``snapjax.algos.RTRLExact`` / ``RTRLApprox`` (``init_traces``,
``step``), ``snapjax.cells.rnn.RNN``, ``snapjax.cells.readout.IdentityLayer``, ``snapjax.cells.stacked.StackedCell``
(``get_snap_n_mask``), ``snapjax.cells.utils.densify_jacobian_mask`` -- with maths written from the papers: RTRL
(Williams & Zipser 1989) J_t = I_t + D_t J_(t-1) on the state, SnAp-n (Menick et al. 2021, arXiv:2006.07232, §3)
J_t = M_n * (I_t + D_t J_(t-1)) with M_1 a unit's own parameters and M_n (n >= 2) all ones (a dense graph).

``SNAPJAX_STANDIN_BUG=no-immediate`` seeds a bug: the immediate Jacobian I_t is dropped from the recursion.
"""
