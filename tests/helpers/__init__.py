"""Helpers shared by test modules and benchmarks (no test module imports another)."""
