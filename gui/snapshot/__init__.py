"""CUDA memory snapshot viewer: SnapshotJob loads a `_dump_snapshot` pickle in a worker (no code runs),
SnapshotView shows active memory over time, the peak, the largest allocations at it and segment totals."""
