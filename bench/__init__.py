"""Benchmarks (not tests): ``python -m bench.store_bench``, see docs/performance.md."""
