"""Report figures' labels (issue 31): a peak label at the plot's edge is not clipped ("ak 2.40 GiB"), and
per-step breakdown labels are thinned so 30 steps do not overlap."""
from __future__ import annotations

from gui.report.plots_png import label_stride, peak_anchor


def test_peak_label_stays_inside_the_plot():
    assert peak_anchor(0.0, 0.0, 400.0)[0] == 0.0  # starts at a peak on the left edge
    assert peak_anchor(400.0, 0.0, 400.0)[0] == 1.0  # ends at one on the right edge
    assert peak_anchor(200.0, 0.0, 400.0)[0] == 0.5
    assert peak_anchor(5.0, 5.0, 5.0)[0] == 0.5  # one sample


def test_breakdown_labels_thin_out_with_many_steps():
    plot_px = 1600 - 80 - 40
    assert label_stride(5, plot_px) == 1
    k = label_stride(30, plot_px)
    assert k >= 2 and plot_px / 30 * k >= 72  # "38.09 ms" labels a bar apart never overlap
    assert label_stride(300, plot_px) >= 15
