"""Blender's cloth on Drape's standard scene (sphere-drop), headless.

Run with Blender 3.4.1 (Debian package `blender`):

    blender -b --factory-startup --python benches/peers/blender_sphere_drop.py -- \
        --grid 32 --quality 5 --frames 60 --out result.json

The scene is the one `drape demo DIR --scene sphere-drop --grid N` writes, converted from
Drape's y-up to Blender's z-up ((x, y, z) -> (x, -z, y)):

- a 1 m x 1 m cloth of N x N vertices, horizontal at z = 0.5 m, triangulated exactly like
  Drape's grid (alternating diagonals; `--topology quads` gives Blender's usual quad grid
  instead, with the same vertices);
- a UV sphere of radius 0.3 m at the origin, 64 segments x 32 rings (as Drape's), with a
  Collision modifier;
- 24 fps, frames 1..F (frame 1 is the cloth at rest, F - 1 frames are simulated).

The cloth uses Blender's defaults, which are also its "Cotton" preset (vertex mass 0.3 kg,
tension / compression / shear stiffness 15, bending 0.5, damping tension / compression / shear
5, bending 0.5, air 1), quality = `--quality` (steps per frame), collision quality 2, cloth
collision distance 15 mm, self-collision off (Blender's default). The collider keeps the
defaults of its Collision modifier (outer thickness 20 mm, friction 5, damping 0.1). Every
value used is written to the JSON.

The timed part is the point-cache bake only (`bpy.ops.ptcache.bake_all`). Afterwards every
frame is read back from the cache as the evaluated mesh, and the script measures:

- `max_stretch`: the largest `length / rest length - 1` over all mesh edges (compressed edges
  count as 0, as in Drape's stats), at the last frame and over all frames;
- penetrations: vertices closer than `0.3 m - tolerance` to the sphere's centre (tolerance
  1 mm by default: the 64 x 32 polygon sphere's faces lie up to 0.7 mm inside the radius), at
  the last frame and the most at any frame, with the deepest depth below the radius.
"""

import argparse
import json
import math
import os
import sys
import time

import bpy

SIZE_M = 1.0
HEIGHT_M = 0.5
SPHERE_RADIUS_M = 0.3
SPHERE_SEGMENTS = 64
SPHERE_RINGS = 32
FPS = 24


def parse_args():
    argv = sys.argv[sys.argv.index("--") + 1 :] if "--" in sys.argv else []
    p = argparse.ArgumentParser(prog="blender_sphere_drop.py")
    p.add_argument("--grid", type=int, default=32, help="vertices per side (N)")
    p.add_argument("--quality", type=int, default=5, help="cloth quality (steps per frame)")
    p.add_argument("--frames", type=int, default=60, help="last frame (frames 1..F)")
    p.add_argument("--out", required=True, help="JSON output")
    p.add_argument("--topology", choices=["tris", "quads"], default="tris")
    p.add_argument("--mass", type=float, default=None,
                   help="vertex mass (kg); default: Blender's 0.3. 'physical' values: "
                        "0.1036 / N^2 is Drape's cotton shirting")
    p.add_argument("--self-collision", action="store_true")
    p.add_argument("--tolerance", type=float, default=0.001,
                   help="penetration tolerance below the radius (m)")
    return p.parse_args(argv)


def grid(n, topology):
    """Drape's grid_cloth(1.0, n, 0.5) in Blender's z-up axes."""
    step = 1.0 / (n - 1)
    verts = []
    for j in range(n):
        for i in range(n):
            u, v = i * step, j * step
            # Drape (x, y, z) = ((u - .5), 0.5, (v - .5)) -> Blender (x, -z, y).
            verts.append(((u - 0.5) * SIZE_M, -(v - 0.5) * SIZE_M, HEIGHT_M))
    faces = []
    idx = lambda i, j: j * n + i  # noqa: E731
    for j in range(n - 1):
        for i in range(n - 1):
            a, b, c, d = idx(i, j), idx(i + 1, j), idx(i, j + 1), idx(i + 1, j + 1)
            if topology == "quads":
                faces.append((a, b, d, c))
            elif (i + j) % 2 == 0:
                faces.append((a, c, d))
                faces.append((a, d, b))
            else:
                faces.append((a, c, b))
                faces.append((b, c, d))
    return verts, faces


def drape_edges(n):
    """The edges of Drape's triangulated grid: rows, columns and one diagonal per cell."""
    idx = lambda i, j: j * n + i  # noqa: E731
    edges = []
    for j in range(n):
        for i in range(n):
            if i + 1 < n:
                edges.append((idx(i, j), idx(i + 1, j)))
            if j + 1 < n:
                edges.append((idx(i, j), idx(i, j + 1)))
            if i + 1 < n and j + 1 < n:
                if (i + j) % 2 == 0:
                    edges.append((idx(i, j), idx(i + 1, j + 1)))
                else:
                    edges.append((idx(i + 1, j), idx(i, j + 1)))
    return edges


def max_strain(co, edges, rest_len):
    """Largest length / rest length - 1 (compressed edges count as 0) and the mean strain."""
    strain = [math.dist(co[a], co[b]) / r - 1.0 for (a, b), r in zip(edges, rest_len)]
    return max(max(strain), 0.0), sum(strain) / len(strain)


def coords(mesh):
    co = [0.0] * (len(mesh.vertices) * 3)
    mesh.vertices.foreach_get("co", co)
    return [tuple(co[k : k + 3]) for k in range(0, len(co), 3)]


def edge_array(mesh):
    e = [0] * (len(mesh.edges) * 2)
    mesh.edges.foreach_get("vertices", e)
    return [(e[k], e[k + 1]) for k in range(0, len(e), 2)]


def main():
    args = parse_args()
    n = args.grid
    scene = bpy.context.scene

    # An empty scene: the factory startup has a cube, a camera and a light.
    for obj in list(bpy.data.objects):
        bpy.data.objects.remove(obj, do_unlink=True)

    scene.render.fps = FPS
    scene.render.fps_base = 1.0
    scene.frame_start = 1
    scene.frame_end = args.frames
    scene.unit_settings.scale_length = 1.0

    # Collider: UV sphere, Collision modifier with its defaults.
    bpy.ops.mesh.primitive_uv_sphere_add(
        segments=SPHERE_SEGMENTS, ring_count=SPHERE_RINGS, radius=SPHERE_RADIUS_M,
        location=(0.0, 0.0, 0.0))
    sphere = bpy.context.active_object
    sphere.name = "sphere"
    sphere.modifiers.new("Collision", "COLLISION")
    col = sphere.collision

    # Cloth.
    verts, faces = grid(n, args.topology)
    mesh = bpy.data.meshes.new("cloth")
    mesh.from_pydata(verts, [], faces)
    mesh.update()
    cloth = bpy.data.objects.new("cloth", mesh)
    scene.collection.objects.link(cloth)
    mod = cloth.modifiers.new("Cloth", "CLOTH")
    s = mod.settings
    s.quality = args.quality
    if args.mass is not None:
        s.mass = args.mass
    cs = mod.collision_settings
    cs.use_collision = True
    cs.use_self_collision = args.self_collision
    cache = mod.point_cache
    cache.frame_start = 1
    cache.frame_end = args.frames

    rest = coords(mesh)
    edges = edge_array(mesh)
    rest_len = [math.dist(rest[a], rest[b]) for a, b in edges]
    dedges = drape_edges(n)
    drest_len = [math.dist(rest[a], rest[b]) for a, b in dedges]

    # Bake: the only timed part.
    scene.frame_set(1)
    t0, c0 = time.perf_counter(), time.process_time()
    bpy.ops.ptcache.bake_all(bake=True)
    bake_s = time.perf_counter() - t0
    bake_cpu_s = time.process_time() - c0
    simulated = args.frames - 1

    # Read every frame back from the cache.
    depsgraph = bpy.context.evaluated_depsgraph_get()
    per_frame = []
    for f in range(1, args.frames + 1):
        scene.frame_set(f)
        ev = cloth.evaluated_get(depsgraph)
        m = ev.to_mesh()
        co = coords(m)
        ev.to_mesh_clear()
        if len(co) != len(rest):
            raise SystemExit(f"frame {f}: {len(co)} vertices, expected {len(rest)}")
        stretch, mean = max_strain(co, edges, rest_len)
        dstretch, _ = max_strain(co, dedges, drest_len)
        dist = [math.hypot(*p) for p in co]  # the sphere is centred at the origin
        inside = [d for d in dist if d < SPHERE_RADIUS_M - args.tolerance]
        per_frame.append({
            "frame": f,
            "max_stretch": stretch,
            "mean_stretch": mean,
            "max_stretch_drape_edges": dstretch,
            "penetrations": len(inside),
            "max_penetration_m": SPHERE_RADIUS_M - min(inside) if inside else 0.0,
            "min_height_m": min(p[2] for p in co),
            "finite": all(math.isfinite(x) for p in co for x in p),
        })
    last = per_frame[-1]

    result = {
        "blender_version": bpy.app.version_string,
        "grid": n,
        "vertices": len(rest),
        "edges": len(edges),
        "faces": len(mesh.polygons),
        "topology": args.topology,
        "quality": args.quality,
        "frames": args.frames,
        "simulated_frames": simulated,
        "bake_seconds": bake_s,
        "s_per_frame": bake_s / simulated,
        "bake_cpu_seconds": bake_cpu_s,
        "load_average": os.getloadavg(),
        "is_baked": bool(cache.is_baked),
        "cpu_count": os.cpu_count(),
        "last_frame": last,
        "summary": {
            "max_stretch": max(p["max_stretch"] for p in per_frame),
            "max_stretch_drape_edges": max(p["max_stretch_drape_edges"] for p in per_frame),
            "penetrations": max(p["penetrations"] for p in per_frame),
            "max_penetration_m": max(p["max_penetration_m"] for p in per_frame),
        },
        "penetration_tolerance_m": args.tolerance,
        "cloth_settings": {
            "quality": s.quality,
            "mass": s.mass,
            "air_damping": s.air_damping,
            "tension_stiffness": s.tension_stiffness,
            "compression_stiffness": s.compression_stiffness,
            "shear_stiffness": s.shear_stiffness,
            "bending_stiffness": s.bending_stiffness,
            "tension_damping": s.tension_damping,
            "compression_damping": s.compression_damping,
            "shear_damping": s.shear_damping,
            "bending_damping": s.bending_damping,
            "bending_model": s.bending_model,
            "gravity": list(scene.gravity) if scene.use_gravity else [0, 0, 0],
            "collision_quality": cs.collision_quality,
            "distance_min": cs.distance_min,
            "use_self_collision": cs.use_self_collision,
            "self_distance_min": cs.self_distance_min,
        },
        "collider_settings": {
            "segments": SPHERE_SEGMENTS,
            "rings": SPHERE_RINGS,
            "sphere_vertices": len(sphere.data.vertices),
            "thickness_outer": col.thickness_outer,
            "cloth_friction": col.cloth_friction,
            "damping": col.damping,
        },
        "per_frame": per_frame,
    }
    with open(args.out, "w") as fh:
        json.dump(result, fh, indent=1)
    print(f"blender q{args.quality} N={n}: {bake_s:.2f} s bake, {bake_s / simulated:.4f} s/frame, "
          f"cpu {bake_cpu_s:.2f} s, max stretch last {last['max_stretch'] * 100:.1f} % "
          f"(Drape's edges {last['max_stretch_drape_edges'] * 100:.1f} %), "
          f"any {result['summary']['max_stretch'] * 100:.1f} %, "
          f"penetrations last {last['penetrations']}, baked {result['is_baked']}")
    if not result["is_baked"] or not all(p["finite"] for p in per_frame):
        raise SystemExit("the bake did not complete")
    if not math.isfinite(bake_s):
        raise SystemExit("no time")


if __name__ == "__main__":
    try:
        main()
    except SystemExit as e:
        if e.code not in (None, 0):
            print(f"error: {e.code}", file=sys.stderr)
            sys.stdout.flush()
            os._exit(1)
        raise
    except Exception:
        import traceback
        traceback.print_exc()
        sys.stdout.flush()
        os._exit(1)
