"""The demo's per-frame correction section (kisekae.app.runtime_report): skinned garments, the capsule path and
the stateless and the carried surface push side by side, with check_pose's numbers."""

from __future__ import annotations

import numpy as np
import pytest

from kisekae.avatar import load_builtin_avatar
from kisekae.avatar.poses import named_pose


@pytest.fixture(scope="module")
def contact_avatar():
    """The demo's avatar: the built-in one on the contact body (its surface bake is cached on it)."""
    return load_builtin_avatar().with_body_contact()


def test_runtime_rows_pictures_and_numbers(contact_avatar):
    from kisekae.app.runtime_report import (RUNTIME_COLUMNS, RUNTIME_FIELDS, RUNTIME_GARMENTS, RUNTIME_LAYERS,
                                            runtime_rows)
    from kisekae.fit.runtime import runtime_pose
    from kisekae.qa.check import check_pose

    av, garments = contact_avatar, list(RUNTIME_GARMENTS)
    rows, records, pixels = runtime_rows(av, poses=("crouch",), views=("knees",), size=(160, 90))
    # one row per layer of garments drawn, three columns (skinned, surface, carried) for the one view
    assert len(rows) == len(RUNTIME_LAYERS) and all(len(row) == len(RUNTIME_COLUMNS) == 3 for row in rows)
    assert all(im.shape == (90, 160, 3) and im.dtype == np.uint8 for row in rows for im in row)
    assert [(p["garments"], p["view"], p["method"]) for p in pixels] == [
        (layer, "knees", label) for layer in RUNTIME_LAYERS for label, _ in RUNTIME_COLUMNS]
    # culling the covered skin never shows more skin through the cloth than drawing the whole body
    assert all(0 <= p["poke_through_pixels_culled"] <= p["poke_through_pixels"] for p in pixels)
    assert all(p["culled_skin_seen_pixels"] >= 0 for p in pixels)
    # the corrections move the tights: their pictures differ from plain skinning's
    tights = rows[0]
    assert all(np.abs(tights[i].astype(int) - tights[0]).sum() > 0 for i in (1, 2))
    # the numbers are check_pose's for the same positions
    by = {(r["method"], r["garment"]): r for r in records}
    assert len(by) == len(records) == len(RUNTIME_COLUMNS) * len(garments)
    pose = named_pose(av.skeleton, "crouch")
    for label, method in RUNTIME_COLUMNS:
        moved = None if method is None else {g: x[0] for g, x in  # worn as a stack, tights under the skirt
                                             runtime_pose(av, pose, garments, method=method, layers=True).items()}
        for rec in check_pose(av, pose, garments, posed_garments=moved):
            assert by[(label, rec["garment"])] == {"pose": "crouch", "method": label, "garment": rec["garment"],
                                                   **{k: rec[k] for k in RUNTIME_FIELDS}}
    # both pushes leave less of each garment inside than plain skinning; the carried one spikes less
    for g in garments:
        inside = {label: by[(label, g)]["inside_count"] for label, _ in RUNTIME_COLUMNS}
        assert max(inside["surface"], inside["carried"]) < inside["skinned"], (g, inside)
        assert by[("carried", g)]["strain_max"] < by[("surface", g)]["strain_max"]


def test_section_runtime_writes_its_sheet_and_reports_the_bake(contact_avatar, tmp_path):
    from kisekae.app.runtime_report import RUNTIME_COLUMNS, RUNTIME_GARMENTS, RUNTIME_POSES, section_runtime

    ctx = {"avatar": contact_avatar, "out": tmp_path}
    html = section_runtime(ctx)
    assert "runtime.png" in html and (tmp_path / "img" / "runtime.png").stat().st_size > 10_000
    assert "edge lift" in html and "at most 4 mm a vertex a frame" in html  # the default's cap, FINISH_STEP
    assert html.count("<tr>") == 1 + len(RUNTIME_POSES) * len(RUNTIME_COLUMNS) * len(RUNTIME_GARMENTS)
    wall, cpu, what = ctx["warmup"]  # the one-time bake, a timings row of its own
    assert wall > 0 and cpu > 0 and "surface candidates" in what
