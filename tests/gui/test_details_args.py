"""The details panel's "All args" rounds floats (issue 31: Kineto's memory bandwidth read 12.846889893532301)."""
from __future__ import annotations

from gui.timeline.details import raw_args_html


def test_all_args_rounds_floats():
    html = raw_args_html({"args": {"memory bandwidth (GB/s)": 12.846889893532301, "bytes": 4096,
                                   "Input Dims": [[1.000000001, 2]], "scale": 123456.789, "name": "1.23456789"}})
    assert "12.85" in html and "12.846" not in html
    assert "123456.8" in html and "[[1.0, 2]]" in html and ">4096<" in html
    assert "1.23456789" in html  # a string stays as recorded
