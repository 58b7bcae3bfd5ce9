"""The problem model: recurrent cells, losses, parameter packing, :class:`Problem` and plain builders.

The lowest domain floor: everything else (oracles, estimators, checks) takes a
:class:`verify.model.problem.Problem` built here.
"""
