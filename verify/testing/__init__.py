"""For users' own test suites: assertions, hypothesis strategies and the pytest plugin."""
