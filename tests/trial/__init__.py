"""A new user's trial of ``--impl`` (issue 37): implementations written from the papers, not from verify/examples."""
