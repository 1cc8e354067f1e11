"""Benchmarks against the tools a user would otherwise pick; run with `make bench`."""
