"""Datasets shared by the device loops (bench/device_pairs/pairs.py, bench/try_pairs/loops.py): a CPU-bound
DataLoader is the planted problem, so each sample pays a per-sample augmentation on the CPU."""
from __future__ import annotations

import torch


class AugmentedImages(torch.utils.data.Dataset):
    """`n` random images of `size` px, each cropped to `crop` px at a shifting offset, flipped every other
    sample, blurred once and normalised (pairs.py: 160 -> 128 px, ~0.3 ms a sample; loops.py: 112 -> 96)."""

    def __init__(self, n: int, size: int, crop: int):
        self.n, self.size, self.crop = n, size, crop

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        img = torch.rand(3, self.size, self.size, generator=g)
        shift = self.size - self.crop
        top, left = (i * 7) % shift, (i * 13) % shift
        img = img[:, top:top + self.crop, left:left + self.crop]
        if i % 2:
            img = img.flip(-1)
        img = torch.nn.functional.avg_pool2d(img.unsqueeze(0), 3, 1, 1).squeeze(0)
        return ((img - 0.5) / 0.25).contiguous(), i % 10
