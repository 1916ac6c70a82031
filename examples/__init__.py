"""Runnable examples of this project (not part of the installed package)."""
