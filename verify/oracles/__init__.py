"""Exact references that the checks compare against (the ``oracles`` floor of the target layout).

:mod:`verify.oracles.algorithm1` -- the independent, explicit-Jacobian Algorithm 1 of Tallec & Ollivier (2018)
and the exact law of its squared errors by enumeration.
"""
