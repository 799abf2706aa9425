"""The demo's body-shape section: one outfit on several bodies in the crouch, before and after the fix."""

from __future__ import annotations

import numpy as np


def test_body_shape_section(tmp_path):
    from kisekae.app.shapes_report import DEMO_BODIES, section_body_shapes

    assert len(DEMO_BODIES) == 5 and len(set(DEMO_BODIES)) == 5
    ctx = {"out": tmp_path, "body_shapes": ("gender=0,weight=1", "age=0.1875")}
    page = section_body_shapes(ctx)
    assert "One outfit on five body shapes" in page and "body_shapes_crouch.png" in page
    assert (tmp_path / "img" / "body_shapes_crouch.png").stat().st_size > 10_000
    rows = ctx["body_shape_rows"]
    assert [r["shape"] for r in rows] == ["gender=0,weight=1", "age=0.1875"]
    heavy, child = rows
    assert child["height_m"] < heavy["height_m"] - 0.2
    for r in rows:
        # the crouch pushes the tights into the body; the fix removes most of what shows (vertices inside, edges
        # through the body, flipped faces: what fix._defects weighs), and where the body overlaps itself it keeps
        # the cloth's shape rather than clear the last vertices by crumpling it
        def visible(rec):
            return rec["inside_count"] + rec["edge_crossings"] + rec["flipped_faces"]

        assert r["before"]["inside_count"] > 50 and r["after"]["inside_count"] < r["before"]["inside_count"]
        assert visible(r["after"]) < 0.6 * visible(r["before"])
        assert r["after"]["strain_p99"] < 1.0
        assert r["pixels_after"] <= r["pixels_before"]
        assert r["before"]["vertices"] == 2674
