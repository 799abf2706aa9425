"""Readers and writers: Wavefront OBJ, MakeHuman (base mesh, rigs, weights, .mhclo), BVH motion, glTF/GLB/VRM
(``gltf`` reads, ``gltf_write`` writes), mesh arrays."""
