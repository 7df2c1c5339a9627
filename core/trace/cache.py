"""Columnar cache (placeholder until the cache lands): never hits."""
from __future__ import annotations


def load(path):
    return None


def store(path, model) -> None:
    return None
