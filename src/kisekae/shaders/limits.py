"""Array sizes of the shader core's constant-array data source, read from the HLSL itself.

``hlsl/kisekae_source_constants.hlsl`` (the source the Unity glue, the O3DE SRG and the Python
renderer use) declares the capsule rig and the wound hits as fixed-size ``float4`` arrays:
``KISEKAE_MAX_CAPSULES`` capsules (two ``float4`` each) and ``KISEKAE_MAX_HITS`` hits. A shader reads
``min(count, size)`` entries, so a rig with more capsules than the arrays hold would lose capsules
without a word: whatever uploads a rig must size its arrays from these numbers and refuse a rig that
does not fit (:func:`check_capsule_count`). The HLSL file is the one place the sizes are written; this
module parses them so Python, the engine glue and the tests cannot drift apart.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import KisekaeError
from .toolchain import HLSL_DIR

#: The constant-array data source the sizes are read from.
CONSTANTS_SOURCE = HLSL_DIR / "kisekae_source_constants.hlsl"


def hlsl_default(name: str, path=CONSTANTS_SOURCE) -> int:
    """The default value of ``#define NAME <int>`` (inside ``#ifndef NAME``) in an HLSL file.

    Parameters
    ----------
    name : str
        Macro name, e.g. ``"KISEKAE_MAX_CAPSULES"``.
    path : path
        HLSL (or AZSL) file.

    Returns
    -------
    int
    """
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    found = re.findall(rf"^\s*#\s*define\s+{re.escape(name)}\s+(\d+)\s*$", text, flags=re.MULTILINE)
    if len(found) != 1:
        raise KisekaeError(f"expected one '#define {name} <integer>', found {len(found)}", path)
    return int(found[0])


#: Capsules the constant arrays hold (``KISEKAE_MAX_CAPSULES``).
MAX_CAPSULES = hlsl_default("KISEKAE_MAX_CAPSULES")
#: Wound hits the constant arrays hold (``KISEKAE_MAX_HITS``).
MAX_HITS = hlsl_default("KISEKAE_MAX_HITS")


def constant_vectors(max_capsules: int = MAX_CAPSULES, max_hits: int = MAX_HITS) -> int:
    """``float4`` uniform slots the constant-array source takes: two per capsule, one per hit, one for counts."""
    return 2 * int(max_capsules) + int(max_hits) + 1


def check_capsule_count(n_capsules: int, max_capsules: int = MAX_CAPSULES, source: str = "capsules") -> int:
    """Refuse a capsule rig that does not fit the constant arrays.

    Parameters
    ----------
    n_capsules : int
        Capsules in the rig.
    max_capsules : int
        Size of the arrays (``KISEKAE_MAX_CAPSULES`` the shader was compiled with).
    source : str
        Name of the rig (file or argument) for the error message.

    Returns
    -------
    int
        ``n_capsules``.

    Raises
    ------
    KisekaeError
        When ``n_capsules > max_capsules``: the shader would silently ignore the capsules past the end.
    """
    n = int(n_capsules)
    if n > int(max_capsules):
        raise KisekaeError(
            f"the rig has {n} capsules but the shader's constant arrays hold {int(max_capsules)} "
            f"(KISEKAE_MAX_CAPSULES); compile the shader with KISEKAE_MAX_CAPSULES >= {n} or use the texture or "
            "structured-buffer source",
            source,
        )
    return n
