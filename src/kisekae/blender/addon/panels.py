"""The add-on's panels in the 3D viewport's sidebar (N), tab "kisekae"."""

from __future__ import annotations

import json

import bpy

#: Report columns: (field, heading, format).
COLUMNS = (("inside_count", "inside", "{:d}"), ("edge_crossings", "crossings", "{:d}"),
           ("flipped_faces", "flipped", "{:d}"), ("max_depth_m", "depth mm", "{:.1f}"),
           ("max_push_m", "push mm", "{:.1f}"))


def _cell(field, fmt, value):
    if value is None:
        return "-"
    return fmt.format(value * 1000 if field.endswith("_m") else value)


def draw_report(layout, text):
    """Draw the JSON report as a small table (one row per garment, frame and stage)."""
    if not text:
        return
    records = json.loads(text)
    box = layout.box()
    head = box.row()
    head.label(text="garment")
    for _, title, _ in COLUMNS:
        head.label(text=title)
    several_frames = len({r.get("frame") for r in records}) > 1
    for r in records[:40]:
        row = box.row()
        row.label(text=f"{r['garment']} {r['stage']}" + (f" f{r['frame']}" if several_frames else ""))
        for field, _, fmt in COLUMNS:
            row.label(text=_cell(field, fmt, r.get(field)))
    if len(records) > 40:
        box.label(text=f"... {len(records) - 40} more rows (scene.kisekae.report holds all)")


class _Base:
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "kisekae"


class KISEKAE_PT_tension(_Base, bpy.types.Panel):
    bl_label = "Tension"

    def draw(self, context):
        layout = self.layout
        obj = context.object
        if obj is None or obj.type != "MESH":
            layout.label(text="Select a mesh")
            return
        s = obj.kisekae_tension
        layout.prop(s, "rest_source")
        if s.rest_source == "OBJECT":
            layout.prop(s, "rest_object")
        col = layout.column(align=True)
        for name in ("falloff", "stretch_area", "compress_area", "weight_limit"):
            col.prop(s, name)
        layout.prop(s, "color_name")
        layout.prop(s, "live")
        layout.operator("kisekae.tension")
        if s.last_ms:
            layout.label(text=f"last update {s.last_ms:.2f} ms")


class KISEKAE_PT_fix(_Base, bpy.types.Panel):
    bl_label = "Fix Clipping"

    def draw(self, context):
        layout = self.layout
        s = context.scene.kisekae
        layout.prop(s, "body")
        layout.label(text="Garments: the selected meshes")
        layout.prop(s, "use_defaults")
        col = layout.column(align=True)
        col.enabled = not s.use_defaults
        for name in ("margin", "stiffness", "max_push", "skirt_bias", "tightness", "softness"):
            col.prop(s, name)
        layout.prop(s, "output")
        if s.output == "CACHE":
            row = layout.row(align=True)
            row.prop(s, "frame_start")
            row.prop(s, "frame_end")
            layout.prop(s, "cache_dir")
            layout.prop(s, "overwrite")
        layout.operator("kisekae.fix_clipping")
        draw_report(layout, s.report)


class KISEKAE_PT_check(_Base, bpy.types.Panel):
    bl_label = "Check"

    def draw(self, context):
        layout = self.layout
        s = context.scene.kisekae
        layout.prop(s, "body")
        layout.operator("kisekae.check")
        draw_report(layout, s.report)


CLASSES = (KISEKAE_PT_tension, KISEKAE_PT_fix, KISEKAE_PT_check)


register, unregister = bpy.utils.register_classes_factory(CLASSES)
