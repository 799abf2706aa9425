"""kisekae: real-time surface effects on skinned characters.

Clothes that stay outside the body (capsule field + push-out), tension maps compatible with
Blender's "Tension Map" node group, wound morphs baked into vertex data, and one HLSL shader
core checked against this Python reference.

Units are metres; the frame is glTF's (+Y up, right-handed, character facing +Z).
"""

__version__ = "0.1.0"

from .errors import KisekaeError  # noqa: F401
