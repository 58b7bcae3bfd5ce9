"""A stand-in for FranzKnut/jax_rtrl (tests only): the module path and call signatures the gallery adapters use
(``jax_rtrl.models.cells.ctrnn.OnlineCTRNNCell``), its maths written for rnn-verify from the papers, no code of
jax_rtrl. See :mod:`jax_rtrl.models.cells.ctrnn`."""
