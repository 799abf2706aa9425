"""Settings of the add-on: per object (tension) and per scene (fix clipping, check, the report)."""

from __future__ import annotations

import bpy
from bpy.props import BoolProperty, EnumProperty, FloatProperty, IntProperty, PointerProperty, StringProperty


def _mesh_poll(self, obj):
    return obj.type == "MESH"


def _live_changed(self, context):
    from . import tension_ops

    tension_ops.sync_handler()


class KisekaeTensionSettings(bpy.types.PropertyGroup):
    """The node group's four inputs (same names and meaning) and where the rest shape comes from."""

    rest_source: EnumProperty(
        name="Rest",
        items=[("BASIS", "Shape key Basis", "The Basis shape key (or the mesh itself when it has no shape keys)"),
               ("OBJECT", "Another object", "The evaluated positions of another mesh with the same vertices"),
               ("FRAME0", "Frame 0", "This object's own evaluated positions at frame 0")],
        default="BASIS")
    rest_object: PointerProperty(name="Reference", type=bpy.types.Object, poll=_mesh_poll,
                                 description="Mesh whose evaluated positions are the rest shape (Reference)")
    falloff: FloatProperty(name="Falloff", default=1.0, description="Strength of both maps (F)")
    stretch_area: FloatProperty(name="Stretch Area", default=1.0,
                                description="Stretch ramps from T = smin(S, 1, 1) up to T = 1")
    compress_area: FloatProperty(name="Compress Area", default=1.0,
                                 description="Compress ramps from T = 1 up to T = smax(1 / max(C, 0.001), 1, 1)")
    weight_limit: FloatProperty(name="Weight Limit", default=1.0, description="Both maps are scaled by clamp(W, 0, 1)")
    color_name: StringProperty(name="Colour attribute", default="Tension Map",
                               description="Name of the colour attribute (R compress, G stretch)")
    live: BoolProperty(name="Update on frame change", default=False, update=_live_changed,
                       description="Recompute on every frame change (playback, scrubbing and renders)")
    last_ms: FloatProperty(name="Last time (ms)", default=0.0)


class KisekaeSceneSettings(bpy.types.PropertyGroup):
    """Fix-clipping and check settings; the push-out parameters keep ``kisekae check --fix``'s names and units."""

    body: PointerProperty(name="Body", type=bpy.types.Object, poll=_mesh_poll,
                          description="The body mesh; the selected meshes other than it are the garments")
    use_defaults: BoolProperty(name="kisekae defaults", default=True,
                               description="Per-garment defaults of kisekae check --fix (skirt bias 0.3 for "
                                           "garments named skirt, dress or kilt); off: the values below")
    margin: FloatProperty(name="Margin", default=0.002, min=0.0, unit="LENGTH", precision=4,
                          description="Minimum clearance from the body (metres)")
    stiffness: FloatProperty(name="Stiffness", default=0.5, min=0.0, max=1.0,
                             description="How firmly the clearance is kept")
    max_push: FloatProperty(name="Max push", default=0.10, min=0.0, unit="LENGTH",
                            description="Cap on any displacement (metres)")
    skirt_bias: FloatProperty(name="Skirt bias", default=0.0, min=0.0, max=1.0,
                              description="Outward bulge for skirts")
    tightness: FloatProperty(name="Tightness", default=0.0, min=0.0, max=1.0, description="Uniform tightness")
    softness: FloatProperty(name="Softness", default=0.0, min=0.0, max=1.0, description="Uniform softness")
    output: EnumProperty(
        name="Result",
        items=[("SHAPE_KEY", "Shape key", "Write a 'kisekae_fix' shape key (the armature animation stays editable)"),
               ("APPLY", "Apply", "Move the mesh's rest vertices so this frame is fixed"),
               ("CACHE", "Bake frames", "Fix every frame of the range into a .pc2 cache read by a Mesh Cache "
                                        "modifier")],
        default="SHAPE_KEY")
    frame_start: IntProperty(name="Start", default=1)
    frame_end: IntProperty(name="End", default=24)
    cache_dir: StringProperty(name="Cache folder", default="//", subtype="DIR_PATH",
                              description="Where the bake writes kisekae_<garment>.pc2")
    overwrite: BoolProperty(name="Overwrite caches", default=False,
                            description="Replace existing .pc2 files (otherwise the bake refuses)")
    report: StringProperty(name="Report", default="", description="JSON records of the last fix or check")


CLASSES = (KisekaeTensionSettings, KisekaeSceneSettings)


def register():
    for c in CLASSES:
        bpy.utils.register_class(c)
    bpy.types.Object.kisekae_tension = PointerProperty(type=KisekaeTensionSettings)
    bpy.types.Scene.kisekae = PointerProperty(type=KisekaeSceneSettings)


def unregister():
    del bpy.types.Scene.kisekae
    del bpy.types.Object.kisekae_tension
    for c in reversed(CLASSES):
        bpy.utils.unregister_class(c)
