"""Summarise a py-spy raw profile of the adapter: where the event loop thread spends its time.

    py-spy record -p <server pid> -d 15 -r 200 -f raw -o profile.txt --nonblocking
    .venv/bin/python bench/profile_stacks.py profile.txt

Stacks rooted in `Thread._bootstrap` are the backend threads; the rest is the event loop.
Prints the inclusive and self shares of the loop thread's frames, then the backend threads'.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path


def frame_name(frame: str) -> str:
    """`f (/long/path/module.py:12)` -> `f (module.py)`."""
    return re.sub(r"\(.*/", "(", re.sub(r":\d+\)", ")", frame))


def summarise(profile: Path) -> tuple[Counter[str], Counter[str], Counter[str], Counter[str]]:
    inclusive: Counter[str] = Counter()
    loop_self: Counter[str] = Counter()
    backend_self: Counter[str] = Counter()
    totals: Counter[str] = Counter()
    for line in profile.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames, samples = stack.split(";"), int(count)
        if frames[0].startswith("Thread._bootstrap"):
            totals["backend"] += samples
            backend_self[frame_name(frames[-1])] += samples
            continue
        totals["loop"] += samples
        loop_self[frame_name(frames[-1])] += samples
        for name in {frame_name(frame) for frame in frames}:
            inclusive[name] += samples
    return totals, inclusive, loop_self, backend_self


def print_shares(title: str, counts: Counter[str], total: int, rows: int) -> None:
    print(f"--- {title}")
    for name, samples in counts.most_common(rows):
        print(f"{100 * samples / total:5.1f}% {name}")


def main() -> None:
    totals, inclusive, loop_self, backend_self = summarise(Path(sys.argv[1]))
    print(f"samples: event loop {totals['loop']}, backend threads {totals['backend']}")
    print_shares("event loop, inclusive", inclusive, totals["loop"], 45)
    print_shares("event loop, self", loop_self, totals["loop"], 20)
    print_shares("backend threads, self", backend_self, totals["backend"], 5)


if __name__ == "__main__":
    main()
