"""Shared timing helper for the benchmarks: best-of-N wall and CPU time, and a table printer."""

from __future__ import annotations

import time


def measure(fn, *, repeat: int = 7, number: int = 1):
    """Best wall and CPU time per call (seconds) over ``repeat`` rounds of ``number`` calls."""
    fn()  # warm-up (JIT, caches)
    best_wall, best_cpu = float("inf"), float("inf")
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        for _ in range(number):
            fn()
        best_wall = min(best_wall, (time.perf_counter() - w) / number)
        best_cpu = min(best_cpu, (time.process_time() - c) / number)
    return best_wall, best_cpu


def table(rows, headers) -> str:
    rows = [[str(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    out = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)), "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(out)


def json_out(path, who: str):
    """A ``--json`` path checked before the run: None stays None; an existing file stops the benchmark (``who`` names
    it) rather than being overwritten."""
    from pathlib import Path

    if path is not None and Path(path).exists():
        raise SystemExit(f"{who}: {path} exists; remove it or choose another name")
    return path


def write_json(path, data) -> None:
    """Write ``data`` as indented JSON to ``path`` (when not None) and say so on stderr."""
    import json
    import sys
    from pathlib import Path

    if path is not None:
        Path(path).write_text(json.dumps(data, indent=1))
        print(f"wrote {path}", file=sys.stderr)
