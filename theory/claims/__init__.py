"""Claim definitions, one module per family (see :mod:`theory.catalog`)."""
