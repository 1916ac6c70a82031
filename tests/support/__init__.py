"""Test support: fixtures and helpers shared by the test modules.

See docs/contributing.md, "The test suite".
"""
