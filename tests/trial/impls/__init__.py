"""Implementations written for the trial (``tests/trial/run_trial.py``), each loaded by file path as a user would."""
