"""paimon-tail benchmarks: ``python -m benchmarks <name> [--size tiny|full]`` (see docs/performance.md)."""
