"""Test support: fixtures and helpers shared by the test modules (see the README's "Tests")."""
