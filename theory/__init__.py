"""What must hold: the claim catalog and the symbolic derivations the checks compare against.

``theory`` never imports ``verify``: it states claims and derives bounds, constants
and closed forms (sympy); ``verify`` computes and compares.
"""
