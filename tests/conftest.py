import os
import tempfile
from pathlib import Path

import numpy as np
import pytest

# Bakes that take seconds (the garments' surface candidates) go to one disk cache that every test worker and the
# oldest-NumPy subprocess share, not to the user's ~/.cache (kisekae.bake_cache; a key covers every input).
os.environ.setdefault("KISEKAE_CACHE_DIR", str(Path(tempfile.gettempdir()) / f"kisekae-test-cache-{os.getuid()}"))


def icosphere(subdiv: int = 2, radius: float = 1.0, center=(0.0, 0.0, 0.0)):
    """Closed, outward-oriented triangle sphere (test geometry)."""
    t = (1.0 + 5 ** 0.5) / 2
    v = [[-1, t, 0], [1, t, 0], [-1, -t, 0], [1, -t, 0], [0, -1, t], [0, 1, t], [0, -1, -t], [0, 1, -t],
         [t, 0, -1], [t, 0, 1], [-t, 0, -1], [-t, 0, 1]]
    f = [[0, 11, 5], [0, 5, 1], [0, 1, 7], [0, 7, 10], [0, 10, 11], [1, 5, 9], [5, 11, 4], [11, 10, 2], [10, 7, 6],
         [7, 1, 8], [3, 9, 4], [3, 4, 2], [3, 2, 6], [3, 6, 8], [3, 8, 9], [4, 9, 5], [2, 4, 11], [6, 2, 10],
         [8, 6, 7], [9, 8, 1]]
    v = [np.array(p, float) / np.linalg.norm(p) for p in v]
    for _ in range(subdiv):
        cache, nf = {}, []

        def mid(a, b):
            key = (min(a, b), max(a, b))
            if key not in cache:
                m = v[a] + v[b]
                v.append(m / np.linalg.norm(m))
                cache[key] = len(v) - 1
            return cache[key]

        for a, b, c in f:
            ab, bc, ca = mid(a, b), mid(b, c), mid(c, a)
            nf += [[a, ab, ca], [b, bc, ab], [c, ca, bc], [ab, bc, ca]]
        f = nf
    return (np.array(v) * radius + np.asarray(center)).astype(np.float64), np.array(f, np.int32)


@pytest.fixture(scope="session")
def avatar():
    from kisekae.avatar.builtin import load_builtin_avatar

    return load_builtin_avatar()


@pytest.fixture(scope="session")
def avatar_cmu():
    from kisekae.avatar.builtin import load_builtin_avatar

    return load_builtin_avatar("cmu_mb")


SHARED = __import__("pathlib").Path(__file__).resolve().parents[1] / "src" / "kisekae" / "data" / "samples"


def flat_srg(tmp_path):
    """kisekae's O3DE SRG with the SRG turned into plain globals (AZSLc is not here), written to tmp_path/srg.hlsl,
    for probes that compile the SRG's data macros through glslang."""
    import re

    srg = SHARED.parents[1] / "shaders" / "o3de" / "KisekaeSrg.azsli"
    flat = srg.read_text().replace("#pragma once", "").replace("KisekaeSrg::", "")
    flat = flat.replace("ShaderResourceGroup KisekaeSrg : SRG_PerObject", "cbuffer KisekaeSrgFlat")
    block = re.search(r"cbuffer KisekaeSrgFlat\s*\{(.*?)\n\}", flat, re.S)
    lines = block.group(1).splitlines()
    resources = [ln for ln in lines if re.match(r"\s*(Texture2D|StructuredBuffer|RWStructuredBuffer)", ln)]
    constants = [ln for ln in lines if ln not in resources]
    flat = flat.replace(block.group(0), "cbuffer KisekaeSrgFlat\n{" + "\n".join(constants) + "\n};\n" +
                        "\n".join(resources))
    (tmp_path / "srg.hlsl").write_text(flat)
    return tmp_path / "srg.hlsl"
