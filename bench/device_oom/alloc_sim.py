"""A small model of torch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp, large pool only, one
stream) used to design the fragmentation scripts before spending device time: best fit by (size, address),
the split rule, the segment sizes (20 MiB for 1-10 MiB requests, 2 MiB rounding above), the per-process cap
checked against reserved + the segment size, the release of whole free segments before the OOM, and
expandable_segments:True (one segment mapped in 20 MiB pages, free pages unmapped on OOM and mapped again at
the lowest address with room). Not the allocator: small requests (<= 1 MiB) and streams are left out.

    python3 bench/device_oom/alloc_sim.py      # runs every scenario of c_fragmentation.py in both modes
"""
from __future__ import annotations

import bisect

MiB = 1 << 20
SMALL, LARGE_BUF, MIN_LARGE, ROUND_LARGE, PAGE = MiB, 20 * MiB, 10 * MiB, 2 * MiB, 20 * MiB


class OOM(Exception):
    pass


def round_size(n: int) -> int:
    return max(512, (n + 511) // 512 * 512)


def allocation_size(n: int) -> int:
    if n <= SMALL:
        return 2 * MiB
    if n < MIN_LARGE:
        return LARGE_BUF
    return (n + ROUND_LARGE - 1) // ROUND_LARGE * ROUND_LARGE


class Native:
    """Segments from cudaMalloc; blocks are [seg, start, size, allocated]."""

    def __init__(self, cap: int):
        self.cap, self.reserved, self.next_addr = cap, 0, 0
        self.segs: dict[int, list] = {}  # base -> ordered blocks [start, size, allocated]
        self.live: dict[int, tuple] = {}  # tensor id -> (base, start)
        self.ids = 0

    def free_blocks(self):
        return sorted((b[1], b[0], base) for base, bl in self.segs.items() for b in bl if not b[2])

    def malloc(self, n: int) -> int:
        n = round_size(n)
        fb = self.free_blocks()
        i = bisect.bisect_left(fb, (n, -1, -1))
        if i == len(fb):
            a = allocation_size(n)
            if self.reserved + a > self.cap:
                for base in [b for b, bl in self.segs.items() if len(bl) == 1 and not bl[0][2]]:
                    self.reserved -= self.segs.pop(base)[0][1]
                if self.reserved + a > self.cap:
                    spare = sum(b[0] for b in self.free_blocks())
                    raise OOM(f"asked {a / MiB:.0f} MiB, reserved {self.reserved / MiB:.0f}, "
                              f"spare {spare / MiB:.0f}, largest free {max([b[0] for b in fb] or [0]) / MiB:.0f}")
            base = self.next_addr
            self.next_addr += a + 64 * MiB
            self.segs[base] = [[base, a, False]]
            self.reserved += a
            size, start = a, base
        else:
            size, start, base = fb[i]
        bl = self.segs[base]
        k = next(j for j, b in enumerate(bl) if b[0] == start)
        if size - n > SMALL:
            bl[k:k + 1] = [[start, n, True], [start + n, size - n, False]]
        else:
            bl[k][2] = True
        self.ids += 1
        self.live[self.ids] = (base, start)
        return self.ids

    def free(self, t: int) -> None:
        base, start = self.live.pop(t)
        bl = self.segs[base]
        k = next(j for j, b in enumerate(bl) if b[0] == start)
        bl[k][2] = False
        if k + 1 < len(bl) and not bl[k + 1][2]:
            bl[k][1] += bl.pop(k + 1)[1]
        if k > 0 and not bl[k - 1][2]:
            bl[k - 1][1] += bl.pop(k)[1]

    def stats(self):
        fb = [b[0] for b in self.free_blocks()]
        return self.reserved, sum(fb), max(fb or [0])


class Expandable:
    """One segment; `blocks` by address: [start, size, state] with state 'a' allocated, 'f' free and mapped,
    'u' unmapped; the last block is the unmapped rest of the address space."""

    def __init__(self, cap: int):
        self.cap = cap
        self.blocks = [[0, 1 << 50, "u"]]
        self.live: dict[int, int] = {}
        self.ids = 0

    @property
    def mapped(self) -> int:
        return sum(b[1] for b in self.blocks if b[2] != "u")

    def _normalize(self):
        out = []
        for b in self.blocks:
            if b[1] == 0:
                continue
            if out and out[-1][2] == b[2] and b[2] != "a":
                out[-1][1] += b[1]
            else:
                out.append(list(b))
        self.blocks = out

    def _exp_size(self, k):
        b = self.blocks[k]
        nxt = self.blocks[k + 1] if k + 1 < len(self.blocks) else None
        return b[1] + (nxt[1] if nxt and nxt[2] == "u" else 0)

    def _take(self, k: int, n: int) -> int:
        b = self.blocks[k]
        if b[1] - n >= 512:
            self.blocks[k:k + 1] = [[b[0], n, "a"], [b[0] + n, b[1] - n, "f"]]
        else:
            b[2] = "a"
        self.ids += 1
        self.live[self.ids] = self.blocks[k][0]
        return self.ids

    def malloc(self, n: int) -> int:
        n = round_size(n)
        frees = sorted((b[1], b[0], k) for k, b in enumerate(self.blocks) if b[2] == "f")
        i = bisect.bisect_left(frees, (n, -1, -1))
        if i < len(frees):
            k = frees[i][2]
            j = i + 1
            while j < len(frees) and self._exp_size(frees[j][2]) < self._exp_size(k):
                k = frees[j][2]
                j += 1
            return self._take(k, n)
        a = allocation_size(n)
        if self.mapped + a > self.cap:
            self._unmap_free_pages()
            if self.mapped + a > self.cap:
                fb = [f[0] for f in frees]
                raise OOM(f"asked {a / MiB:.0f} MiB, reserved {self.mapped / MiB:.0f}, spare {sum(fb) / MiB:.0f}")
        # the lowest unmapped block (with a free mapped block just before it) that has room
        for k, b in enumerate(self.blocks):
            if b[2] != "u":
                continue
            s = k - 1 if k > 0 and self.blocks[k - 1][2] == "f" else k
            room, j = 0, s
            while j < len(self.blocks) and self.blocks[j][2] != "a" and room < n:
                room += self.blocks[j][1]
                j += 1
            if room >= n:
                break
        start = self.blocks[s][0]
        end = start + n  # map whole pages over [start, end)
        for blk in self.blocks:
            if blk[2] == "u" and blk[0] < end and blk[0] + blk[1] > start:
                lo = blk[0] // PAGE * PAGE
                hi = min(-(-end // PAGE) * PAGE, blk[0] + blk[1])
                self._set(lo, hi, "f")
        self._normalize()
        k = next(k for k, b in enumerate(self.blocks) if b[0] <= start < b[0] + b[1])
        assert self.blocks[k][2] == "f" and self.blocks[k][0] == start and self.blocks[k][1] >= n, self.blocks[k]
        return self._take(k, n)

    def _set(self, lo, hi, state):
        out = []
        for b in self.blocks:
            s, e = b[0], b[0] + b[1]
            if e <= lo or s >= hi:
                out.append(b)
                continue
            if s < lo:
                out.append([s, lo - s, b[2]])
            out.append([max(s, lo), min(e, hi) - max(s, lo), state])
            if e > hi:
                out.append([hi, e - hi, b[2]])
        self.blocks = out

    def _unmap_free_pages(self):
        for b in [list(b) for b in self.blocks if b[2] == "f"]:
            lo, hi = -(-b[0] // PAGE) * PAGE, (b[0] + b[1]) // PAGE * PAGE
            if hi > lo:
                self._set(lo, hi, "u")
        self._normalize()

    def free(self, t: int) -> None:
        start = self.live.pop(t)
        for b in self.blocks:
            if b[0] == start:
                b[2] = "f"
        self._normalize()

    def stats(self):
        fb = [b[1] for b in self.blocks if b[2] == "f"]
        return self.mapped, sum(fb), max(fb or [0])


def run(scenario, mode: str, cap: int) -> str:
    al = Native(cap) if mode == "native" else Expandable(cap)
    try:
        scenario(al)
    except OOM as e:
        return f"OOM ({e})"
    r, spare, big = al.stats()
    return f"ok (reserved {r / MiB:.0f} MiB, spare {spare / MiB:.0f}, largest free {big / MiB:.0f})"


if __name__ == "__main__":
    import os
    import sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from c_fragmentation import SCENARIOS, simulate  # noqa: E402
    for name in SCENARIOS:
        for mode in ("native", "expandable"):
            print(f"{name:12} {mode:10} {run(lambda al, n=name: simulate(n, al), mode, SCENARIOS[name]['cap'])}")
