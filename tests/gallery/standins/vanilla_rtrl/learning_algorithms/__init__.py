"""Stand-in for vanilla-rtrl's ``learning_algorithms`` (see ../README.md)."""
