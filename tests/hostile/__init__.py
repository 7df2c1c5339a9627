"""Hostile-input generators and the tests that feed them to ptprof (issue 14)."""
