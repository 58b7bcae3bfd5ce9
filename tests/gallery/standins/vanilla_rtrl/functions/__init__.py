"""Stand-in for vanilla-rtrl's ``functions`` (see ../README.md): each a pair (f, f_prime)."""

from types import SimpleNamespace

import numpy as np

tanh = SimpleNamespace(f=np.tanh, f_prime=lambda h: 1.0 - np.tanh(h) ** 2)
relu = SimpleNamespace(f=lambda h: np.maximum(h, 0.0), f_prime=lambda h: (h > 0).astype(float))
identity = SimpleNamespace(f=lambda z: z, f_prime=lambda z: np.ones_like(z))
mean_squared_error = SimpleNamespace(f=lambda z, y: 0.5 * np.sum((z - y) ** 2), f_prime=lambda z, y: z - y)
