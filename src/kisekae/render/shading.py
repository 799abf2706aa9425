"""GLSL programs of the renderer, behind a swappable shading backend.

The renderer asks a :class:`ShadingBackend` for the surface program and for the uniforms of one
material. :class:`BuiltinShading` is this module's own GLSL 3.30. A backend built from the
cross-compiled HLSL core (``kisekae.shaders``) plugs in the same way: it provides sources whose
vertex stage reads the attributes in :data:`ATTRIBUTES` and whose fragment stage writes one
``vec4`` colour, and a ``uniforms(material, camera, ...)`` mapping.

Per-vertex attribute layout (interleaved float32, 12 floats per vertex)::

    in_position (3)  metres, world
    in_normal   (3)  unit
    in_effect   (4)  tightness, compress, stretch, wound   (each 0..1)
    in_heat     (1)  any scalar (heat maps)
    in_pad      (1)  reserved (0)
"""

from __future__ import annotations

import numpy as np

from .materials import KINDS, Material

#: Attribute names and widths, in buffer order.
ATTRIBUTES: tuple[tuple[str, int], ...] = (
    ("in_position", 3), ("in_normal", 3), ("in_effect", 4), ("in_heat", 1), ("in_pad", 1))
#: Floats per vertex.
STRIDE = sum(n for _, n in ATTRIBUTES)
#: moderngl buffer format string for :data:`ATTRIBUTES`.
BUFFER_FORMAT = "3f 3f 4f 1f 1f"

SURFACE_VS = """
#version 330
uniform mat4 u_view_proj;
in vec3 in_position;
in vec3 in_normal;
in vec4 in_effect;
in float in_heat;
out vec3 v_pos;
out vec3 v_nrm;
out vec4 v_effect;
out float v_heat;
void main() {
    v_pos = in_position;
    v_nrm = in_normal;
    v_effect = in_effect;
    v_heat = in_heat;
    gl_Position = u_view_proj * vec4(in_position, 1.0);
}
"""

SURFACE_FS = """
#version 330
in vec3 v_pos;
in vec3 v_nrm;
in vec4 v_effect;
in float v_heat;
out vec4 f_color;

uniform int u_kind;            // 0 skin, 1 cloth, 2 wireframe base, 3 heat map, 4 tension
uniform vec3 u_base;           // sRGB 0..1
uniform vec3 u_eye;            // world, metres
uniform vec3 u_key_dir;        // unit, toward the key light
uniform vec3 u_fill_dir;       // unit, toward the fill light
uniform float u_dent_depth;    // metres at tightness 1
uniform float u_ao_gain;
uniform float u_sss;
uniform float u_sss_loss;
uniform float u_wrinkle_amp;   // metres at compress 1
uniform float u_wrinkle_freq;  // ridges per metre
uniform float u_bands;         // 0 = smooth
uniform float u_contrast;
uniform float u_rim;
uniform float u_specular;
uniform int u_shaded;
uniform vec3 u_wound_color;    // sRGB
uniform vec2 u_heat_range;
uniform sampler2D u_cmap;      // 256 x 1 colormap

vec3 to_linear(vec3 c) { return pow(c, vec3(2.2)); }
vec3 to_srgb(vec3 c) { return pow(clamp(c, 0.0, 1.0), vec3(1.0 / 2.2)); }

// Bump a normal by the screen-space gradient of a height field h (metres along n),
// using the surface-gradient formulation (no tangent frame needed).
vec3 bump(vec3 n, float h) {
    vec3 dpdx = dFdx(v_pos);
    vec3 dpdy = dFdy(v_pos);
    vec3 r1 = cross(dpdy, n);
    vec3 r2 = cross(n, dpdx);
    float det = dot(dpdx, r1);
    if (abs(det) < 1e-20) return n;
    vec3 grad = sign(det) * (dFdx(h) * r1 + dFdy(h) * r2);
    return normalize(abs(det) * n - grad);
}

// Procedural wrinkle height in -1..1: ridges across the vertical axis, warped so they read as folds.
float wrinkle_pattern(vec3 p) {
    float k = 6.2831853 * u_wrinkle_freq;
    float warp = 0.35 * sin(0.37 * k * p.x + 1.3) + 0.25 * sin(0.29 * k * p.z + 0.4);
    return sin(k * p.y + 3.0 * warp);
}

float toon(float x) {
    if (u_bands < 0.5) return x;
    float q = x * u_bands;
    float w = max(fwidth(q), 1e-4);
    float base = floor(q);
    return (base + smoothstep(0.5 - w, 0.5 + w, fract(q) - 0.0)) / u_bands;
}

void main() {
    vec3 n = normalize(v_nrm);
    if (!gl_FrontFacing) n = -n;
    float tight = clamp(v_effect.x, 0.0, 1.0);
    float compress = clamp(v_effect.y, 0.0, 1.0);
    float stretch = clamp(v_effect.z, 0.0, 1.0);
    float wound = clamp(v_effect.w, 0.0, 1.0);

    vec3 base = u_base;
    if (u_kind == 3) {
        float t = clamp((v_heat - u_heat_range.x) / (u_heat_range.y - u_heat_range.x), 0.0, 1.0);
        base = texture(u_cmap, vec2((t * 255.0 + 0.5) / 256.0, 0.5)).rgb;
    } else if (u_kind == 4) {
        base = vec3(compress, stretch, 0.0);
    }
    if ((u_kind == 3 || u_kind == 4) && u_shaded == 0) { f_color = vec4(base, 1.0); return; }

    float ao = 1.0;
    float sss = 0.0;
    if (u_kind == 0) {
        // tight look: a dent where the garment presses (normal from the tightness gradient), darker AO,
        // less scattering under pressure
        n = bump(n, -u_dent_depth * tight);
        ao = 1.0 - u_ao_gain * tight;
        sss = u_sss * (1.0 - u_sss_loss * tight);
        base = mix(base, u_wound_color, wound);
        ao *= 1.0 - 0.35 * wound;
    }
    if ((u_kind == 0 || u_kind == 1) && u_wrinkle_amp > 0.0) {
        n = bump(n, u_wrinkle_amp * compress * wrinkle_pattern(v_pos));
    }

    vec3 v = normalize(u_eye - v_pos);
    float ndl = dot(n, u_key_dir);
    float wrap = sss;
    float diffuse = max((ndl + wrap) / (1.0 + wrap), 0.0);
    diffuse = pow(toon(diffuse), u_contrast);
    float fill = max(dot(n, u_fill_dir), 0.0) * 0.25;
    float spec = 0.0;
    if (ndl > 0.0 && u_kind != 2) {
        vec3 h = normalize(u_key_dir + v);
        spec = u_specular * pow(max(dot(n, h), 0.0), 48.0);
        if (u_bands > 0.5) spec = step(0.5 * u_specular, spec) * u_specular;
    }
    float rim = u_rim * pow(1.0 - max(dot(n, v), 0.0), 3.0);

    vec3 albedo = to_linear(base);
    vec3 light = vec3(0.16) * ao + vec3(diffuse * 0.9 + fill) * ao;
    if (u_kind == 0) {
        // warm scattered light on the shadow side
        light += sss * vec3(0.35, 0.08, 0.05) * (1.0 - max(ndl, 0.0)) * ao;
    }
    vec3 c = albedo * light + vec3(spec) + vec3(rim) * ao;
    f_color = vec4(to_srgb(c), 1.0);
}
"""

WIRE_VS = """
#version 330
uniform mat4 u_view_proj;
uniform float u_depth_bias;   // NDC units, pulls lines toward the camera
in vec3 in_position;
void main() {
    vec4 p = u_view_proj * vec4(in_position, 1.0);
    p.z -= u_depth_bias * p.w;
    gl_Position = p;
}
"""

WIRE_FS = """
#version 330
uniform vec3 u_color;
out vec4 f_color;
void main() { f_color = vec4(u_color, 1.0); }
"""

ID_VS = """
#version 330
uniform mat4 u_view_proj;
uniform mat4 u_view;
in vec3 in_position;
out float v_depth;
void main() {
    v_depth = -(u_view * vec4(in_position, 1.0)).z;
    gl_Position = u_view_proj * vec4(in_position, 1.0);
}
"""

ID_FS = """
#version 330
uniform float u_id;
in float v_depth;
out vec2 f_id_depth;   // (id, or -id on back faces; linear depth in metres)
void main() { f_id_depth = vec2(gl_FrontFacing ? u_id : -u_id, v_depth); }
"""


class BuiltinShading:
    """The renderer's own GLSL 3.30 shading (skin, cloth, wireframe, heat map, tension)."""

    name = "builtin-glsl"
    vertex_shader = SURFACE_VS
    fragment_shader = SURFACE_FS

    def uniforms(self, material: Material, eye, key_dir, fill_dir) -> dict:
        """Uniform values for one material, as ``{name: value}``."""
        p = material.preset
        wrinkles = material.wrinkles and material.kind in ("skin", "cloth")
        return {
            "u_kind": KINDS[material.kind],
            "u_base": material.color,
            "u_eye": tuple(float(x) for x in eye),
            "u_key_dir": tuple(float(x) for x in key_dir),
            "u_fill_dir": tuple(float(x) for x in fill_dir),
            "u_dent_depth": p.dent_depth,
            "u_ao_gain": p.ao_gain,
            "u_sss": p.sss,
            "u_sss_loss": p.sss_loss,
            "u_wrinkle_amp": p.wrinkle_amp if wrinkles else 0.0,
            "u_wrinkle_freq": p.wrinkle_freq,
            "u_bands": float(p.bands) if material.kind in ("skin", "cloth") else 0.0,
            "u_contrast": p.contrast if material.kind in ("skin", "cloth") else 1.0,
            "u_rim": p.rim if material.kind in ("skin", "cloth") else 0.0,
            "u_specular": p.specular,
            "u_shaded": int(bool(material.shaded)),
            "u_wound_color": material.wound_color,
            "u_heat_range": material.heat_range,
        }


def light_directions(camera) -> tuple[np.ndarray, np.ndarray]:
    """Key and fill light directions (unit, toward the light) placed relative to the camera.

    The key light sits above and to the left of the camera, the fill low on the right, so every
    view is lit from the front whatever its azimuth.
    """
    r, u, f = camera.basis()
    key = -f + 0.55 * u - 0.45 * r
    fill = -f - 0.2 * u + 0.8 * r
    return key / np.linalg.norm(key), fill / np.linalg.norm(fill)
