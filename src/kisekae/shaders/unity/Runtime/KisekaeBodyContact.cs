// Writes the body's joint planes (kisekae's contact-aware body, kisekae_contact.hlsl) to the global shader
// arrays every frame, and gives the body mesh the per-vertex contact data the Kisekae/BodyURP shader reads.
// Input: body_contact.json from `kisekae fit -o DIR` (kisekae.shaders.contact_bake), as a TextAsset.
// Per joint, each frame, with M = bone.localToWorldMatrix * bindpose (the bone's skinning matrix):
//   v = M_child * restDir + M_parent * restDir;  centre = M_child * restCentre;  normal = v / |v|
//   reach = clamp(2 / |v|, ringFactor, maxReach) ring radii (the joint reaches farther in deeper bends)
// into _KisekaeJointCentre (xyz centre, w reach); a joint whose two carried directions cancel (|v| <= 1e-3,
// folded flat) is written inactive (reach 0). Per joint, once: _KisekaeJointRest = (rest centre, flesh), the
// joint's radial reach in metres. This is kisekae.shaders.contact_bake.posed_tables, which the tests check
// against the Python contact step.
// Per vertex (UV channels 4, 5, 6 of an instance of the shared mesh): joint ids, sides (+1 child, -1 parent,
// 0 unused slot), rest position. The bake is in kisekae's (glTF) mesh space; `mirrorX` mirrors it for
// importers that flip X (most glTF importers for Unity do). Units: metres, unit scale.
// The table holds MaxJoints joints (KISEKAE_MAX_JOINTS of kisekae_source_constants.hlsl; change both
// together); a bigger body, a bone name the renderer does not have or a vertex count that differs is refused
// with an error naming the object, and the component disables itself with the contact off (every reach 0).
// Not compiled or run in kisekae's CI (no Unity there).
using System;
using System.Collections.Generic;
using UnityEngine;

namespace Kisekae
{
    [Serializable]
    public class KisekaeContactJoint
    {
        public string child;
        public string parent;
        public float[] restCentre;  // mesh space, m
        public float[] restDir;     // unit
        public float radius;        // m
        public float flesh;         // radial reach, m (> 0)
    }

    [Serializable]
    public class KisekaeContactBake
    {
        public int version;
        public float gap;
        public float band;
        public float ringFactor;    // reach in ring radii in mild bends
        public float maxReach;      // reach in ring radii in the deepest bends
        public float restSlack;
        public KisekaeContactJoint[] joints;
        public int[] vertexJoints;   // 4 per vertex
        public float[] vertexSides;  // 4 per vertex
        public float[] vertexRest;   // 3 per vertex, m
    }

    [ExecuteAlways]
    public class KisekaeBodyContact : MonoBehaviour
    {
        public const int MaxJoints = 64;  // = KISEKAE_MAX_JOINTS of the shader (arrays are sized once)
        public const int BakeVersion = 2; // = kisekae.shaders.contact_bake.BAKE_VERSION

        public SkinnedMeshRenderer body;
        public TextAsset bake;
        [Tooltip("Mirror the bake's X axis (glTF importers that flip X)")]
        public bool mirrorX = true;

        static readonly int IdCentre = Shader.PropertyToID("_KisekaeJointCentre");
        static readonly int IdNormal = Shader.PropertyToID("_KisekaeJointNormal");
        static readonly int IdRest = Shader.PropertyToID("_KisekaeJointRest");
        static readonly int IdRestDir = Shader.PropertyToID("_KisekaeJointRestDir");
        static readonly int IdContact = Shader.PropertyToID("_KisekaeContact");

        readonly Vector4[] _centre = new Vector4[MaxJoints];
        readonly Vector4[] _normal = new Vector4[MaxJoints];
        readonly Vector4[] _rest = new Vector4[MaxJoints];
        readonly Vector4[] _restDir = new Vector4[MaxJoints];

        KisekaeContactBake _bake;
        int[] _child;
        int[] _parent;
        Mesh _mesh;
        List<Vector4> _vertexJoints;
        List<Vector4> _vertexSides;
        List<Vector3> _vertexRest;

        // For KisekaeSurfacePush.cs, which applies the same contact to the body in a compute pass: whether the bake
        // was accepted, this frame's table (the arrays the global _KisekaeJoint* are set from; read only) and the
        // per-vertex data as written to UV channels 4, 5, 6.
        public bool Active => enabled && _bake != null && _vertexJoints != null;
        public Vector4[] JointCentre => _centre;
        public Vector4[] JointNormal => _normal;
        public Vector4[] JointRest => _rest;
        public Vector4[] JointRestDir => _restDir;
        public Vector4 ContactParams => _bake == null ? Vector4.zero
            : new Vector4(_bake.gap, _bake.band, _bake.ringFactor, _bake.restSlack);
        public IReadOnlyList<Vector4> VertexJoints => _vertexJoints;
        public IReadOnlyList<Vector4> VertexSides => _vertexSides;
        public IReadOnlyList<Vector3> VertexRest => _vertexRest;

        Vector3 Mirror(float[] v, int at)
        {
            return new Vector3(mirrorX ? -v[at] : v[at], v[at + 1], v[at + 2]);
        }

        // Null when the bake fits this renderer and the shader's table, else the message that refuses it.
        public string BakeProblem(KisekaeContactBake b)
        {
            if (body == null || body.sharedMesh == null)
                return $"KisekaeBodyContact on '{name}': no body SkinnedMeshRenderer";
            if (b == null || b.version != BakeVersion || b.joints == null)
                return $"KisekaeBodyContact on '{name}': the bake is not a version-{BakeVersion} kisekae body " +
                       "contact bake (write it again with kisekae fit)";
            if (!(b.maxReach >= b.ringFactor && b.ringFactor > 1f) || float.IsInfinity(b.maxReach))
                return $"KisekaeBodyContact on '{name}': the bake's ringFactor {b.ringFactor} / maxReach " +
                       $"{b.maxReach} are out of range";
            if (b.joints.Length > MaxJoints)
                return $"KisekaeBodyContact on '{name}': the bake has {b.joints.Length} joints but the shader's " +
                       $"table holds {MaxJoints} (KISEKAE_MAX_JOINTS); raise both together";
            int n = body.sharedMesh.vertexCount;
            if (b.vertexJoints.Length != 4 * n || b.vertexSides.Length != 4 * n || b.vertexRest.Length != 3 * n)
                return $"KisekaeBodyContact on '{name}': the bake is for another mesh ({b.vertexRest.Length / 3} " +
                       $"vertices, the body has {n})";
            var index = new Dictionary<string, int>();
            for (int i = 0; i < body.bones.Length; i++)
                if (body.bones[i] != null) index[body.bones[i].name] = i;
            _child = new int[b.joints.Length];
            _parent = new int[b.joints.Length];
            for (int j = 0; j < b.joints.Length; j++)
            {
                if (!index.TryGetValue(b.joints[j].child, out _child[j]) ||
                    !index.TryGetValue(b.joints[j].parent, out _parent[j]))
                    return $"KisekaeBodyContact on '{name}': joint {j} names bones '{b.joints[j].child}' / " +
                           $"'{b.joints[j].parent}' that the body's renderer does not have";
                if (!(b.joints[j].flesh > 0f) || float.IsInfinity(b.joints[j].flesh))
                    return $"KisekaeBodyContact on '{name}': joint {j} has flesh {b.joints[j].flesh} (needs > 0 m)";
            }
            return null;
        }

        void OnEnable()
        {
            _vertexJoints = null;
            _bake = bake != null ? JsonUtility.FromJson<KisekaeContactBake>(bake.text) : null;
            string problem = BakeProblem(_bake);
            if (problem != null)
            {
                Refuse(problem);
                return;
            }
            WriteVertexData();
            for (int j = 0; j < _bake.joints.Length; j++)
            {
                var jt = _bake.joints[j];
                Vector3 c = Mirror(jt.restCentre, 0);
                Vector3 d = Mirror(jt.restDir, 0);
                _rest[j] = new Vector4(c.x, c.y, c.z, jt.flesh);  // flesh is a length: mirrorX leaves it
                _restDir[j] = new Vector4(d.x, d.y, d.z, 0f);
            }
            Shader.SetGlobalVectorArray(IdRest, _rest);
            Shader.SetGlobalVectorArray(IdRestDir, _restDir);
            Shader.SetGlobalVector(IdContact, new Vector4(_bake.gap, _bake.band, _bake.ringFactor, _bake.restSlack));
        }

        void WriteVertexData()
        {
            int n = body.sharedMesh.vertexCount;
            var joints = new List<Vector4>(n);
            var sides = new List<Vector4>(n);
            var rest = new List<Vector3>(n);
            for (int i = 0; i < n; i++)
            {
                int a = 4 * i;
                joints.Add(new Vector4(_bake.vertexJoints[a], _bake.vertexJoints[a + 1], _bake.vertexJoints[a + 2],
                                       _bake.vertexJoints[a + 3]));
                sides.Add(new Vector4(_bake.vertexSides[a], _bake.vertexSides[a + 1], _bake.vertexSides[a + 2],
                                      _bake.vertexSides[a + 3]));
                rest.Add(Mirror(_bake.vertexRest, 3 * i));
            }
            _vertexJoints = joints;
            _vertexSides = sides;
            _vertexRest = rest;
            _mesh = Instantiate(body.sharedMesh);
            _mesh.SetUVs(4, joints);
            _mesh.SetUVs(5, sides);
            _mesh.SetUVs(6, rest);
            body.sharedMesh = _mesh;
        }

        void Refuse(string problem)
        {
            Debug.LogError(problem, this);
            Array.Clear(_centre, 0, MaxJoints);  // w = reach 0: every joint inactive, the body stays plain skinning
            Shader.SetGlobalVectorArray(IdCentre, _centre);
            enabled = false;
        }

        void LateUpdate()
        {
            if (_bake == null) return;
            Matrix4x4[] bindposes = body.sharedMesh.bindposes;
            Transform[] bones = body.bones;
            for (int j = 0; j < _bake.joints.Length; j++)
            {
                Matrix4x4 mc = bones[_child[j]].localToWorldMatrix * bindposes[_child[j]];
                Matrix4x4 mp = bones[_parent[j]].localToWorldMatrix * bindposes[_parent[j]];
                Vector3 c = mc.MultiplyPoint3x4((Vector3)_rest[j]);
                Vector3 v = mc.MultiplyVector((Vector3)_restDir[j]) + mp.MultiplyVector((Vector3)_restDir[j]);
                float length = v.magnitude;
                bool active = length > 1e-3f;
                Vector3 nrm = active ? v / length : Vector3.up;
                float reach = active ? Mathf.Clamp(2f / length, _bake.ringFactor, _bake.maxReach) : 0f;
                _centre[j] = new Vector4(c.x, c.y, c.z, reach);
                _normal[j] = new Vector4(nrm.x, nrm.y, nrm.z, _bake.joints[j].radius);
            }
            for (int j = _bake.joints.Length; j < MaxJoints; j++) _centre[j] = Vector4.zero;
            Shader.SetGlobalVectorArray(IdCentre, _centre);
            Shader.SetGlobalVectorArray(IdNormal, _normal);
        }
    }
}
