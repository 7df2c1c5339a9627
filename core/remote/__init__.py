"""Remote runs over SSH (`ptprof record --host`, `ptprof remote`); see docs/architecture.md."""
