"""Pictures of the kisekae extension's panels, from headless Blender.

Headless Blender (the bpy wheel, background mode) has no window, so it cannot take a screenshot of
its interface. This script does the next honest thing: in ``.venv-blender`` it installs the built
extension, sets up a small scene (a sphere "body" and a smaller, offset sphere "garment" that
pokes into it), runs the check and fix operators for real, and calls each panel's own ``draw()``
with a recording layout (rows, columns, boxes, properties with their current values, labels,
operator buttons). Then, in ``.venv``, it draws that recorded layout with Pillow in the style of
Blender's sidebar. The pictures say so in their footer.

Usage (from the repository root)::

    .venv/bin/kisekae blender-addon -o /tmp/ext
    .venv/bin/python scripts/blender_panel_images.py --zip /tmp/ext/kisekae-0.1.0.zip --out docs/images [--force]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PANELS = ("KISEKAE_PT_tension", "KISEKAE_PT_fix", "KISEKAE_PT_check")


# ---------------------------------------------------------------- step 1: in Blender (.venv-blender)


def record(zip_path: str, out_json: str) -> None:
    user = tempfile.mkdtemp(prefix="kisekae-bl-user-")
    for key in ("RESOURCES", "CONFIG", "SCRIPTS", "EXTENSIONS"):
        os.environ[f"BLENDER_USER_{key}"] = os.path.join(user, key.lower())
    import bpy

    assert bpy.ops.extensions.package_install_files(filepath=zip_path, repo="user_default",
                                                    enable_on_install=True) == {"FINISHED"}
    for o in list(bpy.data.objects):
        bpy.data.objects.remove(o)
    bpy.ops.mesh.primitive_uv_sphere_add(radius=0.3, location=(0, 0, 1))
    body = bpy.context.object
    body.name = "body"
    bpy.ops.mesh.primitive_uv_sphere_add(radius=0.28, location=(0.04, 0, 1))
    garment = bpy.context.object
    garment.name = "shirt"
    scene = bpy.context.scene
    scene.kisekae.body = body
    for o in scene.objects:
        o.select_set(o == garment)
    bpy.context.view_layer.objects.active = garment
    garment.kisekae_tension.rest_source = "BASIS"
    assert bpy.ops.kisekae.tension() == {"FINISHED"}  # the first call compiles kisekae's Numba kernels
    assert bpy.ops.kisekae.tension() == {"FINISHED"}
    out = {}
    assert bpy.ops.kisekae.check() == {"FINISHED"}
    out["KISEKAE_PT_check"] = _draw(bpy, "KISEKAE_PT_check")
    assert bpy.ops.kisekae.fix_clipping() == {"FINISHED"}
    out["KISEKAE_PT_fix"] = _draw(bpy, "KISEKAE_PT_fix")
    out["KISEKAE_PT_tension"] = _draw(bpy, "KISEKAE_PT_tension")
    out["_version"] = bpy.app.version_string
    Path(out_json).write_text(json.dumps(out, indent=1))


class _Layout:
    """Stands in for ``bpy.types.UILayout``: records what a panel's draw() asks for."""

    def __init__(self, kind="column"):
        self.node = {"kind": kind, "items": [], "enabled": True}
        self._kids = []

    @property
    def enabled(self):
        return self.node["enabled"]

    @enabled.setter
    def enabled(self, value):
        self.node["enabled"] = bool(value)

    def _child(self, kind):
        c = _Layout(kind)
        self.node["items"].append(c.node)
        return c

    def row(self, align=False, **_):
        return self._child("row")

    def column(self, align=False, **_):
        return self._child("column")

    def box(self):
        return self._child("box")

    def label(self, text="", **_):
        self.node["items"].append({"kind": "label", "text": text})

    def operator(self, idname, text=None, **_):
        import bpy

        mod, name = idname.split(".")
        label = text or getattr(getattr(bpy.ops, mod), name).get_rna_type().name
        self.node["items"].append({"kind": "button", "text": label})

    def prop(self, data, name, text=None, **_):
        p = data.bl_rna.properties[name]
        v = getattr(data, name)
        if p.type == "ENUM":
            shown, kind = p.enum_items[v].name, "enum"
        elif p.type == "BOOLEAN":
            shown, kind = bool(v), "check"
        elif p.type == "POINTER":
            shown, kind = (v.name if v is not None else ""), "pointer"
        elif p.type == "FLOAT":
            shown = f"{v:.3f}" + (" m" if p.unit == "LENGTH" else "")
            kind = "number"
        elif p.type == "INT":
            shown, kind = str(v), "number"
        else:
            shown, kind = str(v), "text"
        self.node["items"].append({"kind": kind, "label": text or p.name, "value": shown})


def _draw(bpy, panel_name):
    cls = getattr(bpy.types, panel_name)
    lay = _Layout()
    fake = type("P", (), {})()
    fake.layout = lay
    cls.draw(fake, bpy.context)
    return {"title": cls.bl_label, "layout": lay.node}


# ---------------------------------------------------------------- step 2: draw (.venv, Pillow)

BG, PANEL, HEAD, FIELD, TEXT, DIM, BUTTON, ACCENT = ((29, 29, 29), (48, 48, 48), (61, 61, 61), (84, 84, 84),
                                                     (230, 230, 230), (150, 150, 150), (90, 90, 90), (71, 114, 179))
W, ROW, PAD = 520, 26, 10


def _font(size):
    from PIL import ImageFont

    return ImageFont.load_default(size=size)


def _height(node):
    if node["kind"] == "row":
        return ROW
    if node["kind"] in ("column", "box"):
        h = sum(_height(c) for c in node["items"])
        return h + (2 * 6 if node["kind"] == "box" else 0)
    return ROW


def _paint(draw, node, x, y, w, enabled=True):
    f = _font(13)
    enabled = enabled and node.get("enabled", True)
    col = TEXT if enabled else DIM
    k = node["kind"]
    if k in ("column", "box"):
        if k == "box":
            draw.rounded_rectangle([x, y, x + w, y + _height(node) - 2], 4, outline=FIELD)
            x, y, w = x + 6, y + 6, w - 12
        for c in node["items"]:
            _paint(draw, c, x, y, w, enabled)
            y += _height(c)
        return
    if k == "row":
        items = node["items"] or []
        # a table row (report): the first column gets a quarter of the width
        first = w / 4 if len(items) > 3 else w / max(len(items), 1)
        rest = (w - first) / max(len(items) - 1, 1) if len(items) > 1 else 0
        cx = x
        for i, c in enumerate(items):
            cw = first if i == 0 else rest
            _paint(draw, c, cx, y, cw - 4, enabled)
            cx += cw
        return
    if k == "label":
        draw.text((x + 2, y + 6), node["text"], fill=col, font=f)
    elif k == "button":
        draw.rounded_rectangle([x, y + 2, x + w, y + ROW - 3], 4, fill=BUTTON)
        draw.text((x + w / 2, y + ROW / 2), node["text"], fill=col, font=f, anchor="mm")
    elif k == "check":
        draw.rounded_rectangle([x + 2, y + 6, x + 16, y + 20], 3, fill=ACCENT if node["value"] else FIELD)
        if node["value"]:
            draw.line([x + 5, y + 13, x + 8, y + 17, x + 14, y + 9], fill=TEXT, width=2)
        draw.text((x + 22, y + 6), node["label"], fill=col, font=f)
    else:
        split = x + w * 0.42
        draw.text((split - 6, y + 6), node["label"], fill=col, font=f, anchor="ra")
        draw.rounded_rectangle([split, y + 2, x + w, y + ROW - 3], 4, fill=FIELD)
        text = node["value"] if node["value"] != "" else "—"
        if k == "number":
            draw.text(((split + x + w) / 2, y + ROW / 2), text, fill=col, font=f, anchor="mm")
        else:
            draw.text((split + 6, y + 6), text + ("  v" if k == "enum" else ""), fill=col, font=f)


def paint(recorded: dict, name: str, path: Path, version: str) -> None:
    from PIL import Image, ImageDraw

    rec = recorded[name]
    body_h = _height(rec["layout"])
    h = 30 + body_h + 2 * PAD + 34
    img = Image.new("RGB", (W, h), BG)
    d = ImageDraw.Draw(img)
    d.rectangle([4, 4, W - 5, h - 30], fill=PANEL)
    d.rectangle([4, 4, W - 5, 30], fill=HEAD)
    d.text((14, 10), "v  " + rec["title"], fill=TEXT, font=_font(14))
    _paint(d, rec["layout"], 4 + PAD, 30 + PAD, W - 8 - 2 * PAD)
    d.text((8, h - 24), f"Layout recorded from the panel's draw() in headless Blender {version};",
           fill=DIM, font=_font(11))
    d.text((8, h - 12), "drawn by scripts/blender_panel_images.py (not a Blender screenshot).", fill=DIM,
           font=_font(11))
    img.save(path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--zip", required=True, help="the extension zip (kisekae blender-addon -o DIR)")
    ap.add_argument("--out", default=str(ROOT / "docs" / "images"), help="folder for blender_panel_*.png")
    ap.add_argument("--record", help=argparse.SUPPRESS)  # step 1, inside .venv-blender
    ap.add_argument("--force", action="store_true", help="overwrite existing pictures")
    args = ap.parse_args(argv)
    if args.record:
        record(args.zip, args.record)
        return 0
    sys.path.insert(0, str(ROOT / "src"))
    from kisekae.outputs import check_outputs

    out = Path(args.out)
    targets = check_outputs([out / f"blender_panel_{n.split('_PT_')[1]}.png" for n in PANELS], force=args.force,
                            folders=[out])
    with tempfile.TemporaryDirectory() as tmp:
        rec_path = Path(tmp) / "layout.json"
        proc = subprocess.run([str(ROOT / ".venv-blender" / "bin" / "python"), __file__, "--zip", args.zip,
                               "--record", str(rec_path)], capture_output=True, text=True)
        if proc.returncode != 0:
            print(proc.stderr[-3000:], file=sys.stderr)
            return 1
        recorded = json.loads(rec_path.read_text())
    out.mkdir(parents=True, exist_ok=True)
    for name, path in zip(PANELS, targets):
        paint(recorded, name, path, recorded["_version"])
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
