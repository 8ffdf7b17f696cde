#!/usr/bin/env python3
"""Shape and stretch of a baked garment at one frame of a `drape bake` glb (stop 31).

Reads the first mesh of the glb (the garment), adds the chosen morph target (default: the
last frame) to its rest positions and prints:

  stretch  the edge stretch (length / rest - 1) over the triangles' edges: median, 90th and
           99th percentiles, max, and where the worst edge is (now and at rest);
  shape    the mean and lowest height (y, m) and the mean distance from the y axis (m): the
           figures docs/solver.md compares against converged solves ("Tried, not kept: a
           coarse-grid correction");
  rings    for the demo skirt (rings of 64 vertices from the waistband, `drape demo --scene
           default`): each third ring's height, radius about the waistband's centre, mean turn
           about the axis (degrees) and hoop length over rest.

Stretch alone rewarded solvers that got the drape wrong; compare shapes against a converged
bake (more iterations per substep) as well. Needs numpy. Not part of CI.

  python3 benches/shapes/glb_shape.py OUT.glb [--frame K] [--rings]
"""
import argparse
import json
import struct
import sys

import numpy as np


def load(path):
    data = open(path, "rb").read()
    if data[:4] != b"glTF":
        sys.exit(f"error: {path}: not a binary glTF")
    json_len = struct.unpack("<I", data[12:16])[0]
    doc = json.loads(data[20:20 + json_len])
    at = 20 + json_len
    bin_len = struct.unpack("<I", data[at:at + 4])[0]
    blob = data[at + 8:at + 8 + bin_len]

    def accessor(i):
        a = doc["accessors"][i]
        view = doc["bufferViews"][a["bufferView"]]
        offset = view.get("byteOffset", 0) + a.get("byteOffset", 0)
        width = {"SCALAR": 1, "VEC3": 3}[a["type"]]
        dtype = {5126: np.float32, 5125: np.uint32, 5123: np.uint16}[a["componentType"]]
        out = np.frombuffer(blob, dtype=dtype, count=a["count"] * width, offset=offset)
        return out.reshape(a["count"], width) if width > 1 else out

    prim = doc["meshes"][0]["primitives"][0]
    rest = accessor(prim["attributes"]["POSITION"]).astype(np.float64)
    tris = accessor(prim["indices"]).reshape(-1, 3)
    targets = [accessor(t["POSITION"]).astype(np.float64) for t in prim.get("targets", [])]
    return rest, tris, targets


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("glb")
    p.add_argument("--frame", type=int, default=-1, help="morph target index (default: the last)")
    p.add_argument("--rings", action="store_true", help="the demo skirt's ring table")
    args = p.parse_args()
    rest, tris, targets = load(args.glb)
    if not targets:
        sys.exit(f"error: {args.glb}: the garment has no morph targets (no baked frames)")
    x = rest + targets[args.frame]

    edges = np.unique(np.sort(np.concatenate([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]]), axis=1), axis=0)
    r = np.linalg.norm(rest[edges[:, 0]] - rest[edges[:, 1]], axis=1)
    keep = r > 0
    edges, r = edges[keep], r[keep]
    s = np.linalg.norm(x[edges[:, 0]] - x[edges[:, 1]], axis=1) / r - 1
    q = np.percentile(s, [50, 90, 99, 100])
    w = int(np.argmax(s))
    mid = (x[edges[w, 0]] + x[edges[w, 1]]) / 2
    mid0 = (rest[edges[w, 0]] + rest[edges[w, 1]]) / 2
    print(f"stretch: median {100*q[0]:.2f} %, 90th {100*q[1]:.2f} %, 99th {100*q[2]:.2f} %, "
          f"max {100*q[3]:.2f} % at {np.round(mid, 3)} m (rest {np.round(mid0, 3)} m)")
    print(f"shape: mean y {x[:, 1].mean():.4f} m, lowest y {x[:, 1].min():.4f} m, "
          f"mean distance from the y axis {np.hypot(x[:, 0], x[:, 2]).mean():.4f} m")
    if args.rings:
        seg = 64
        if len(x) % seg:
            sys.exit("error: --rings expects rings of 64 vertices (drape demo --scene default)")
        c = rest[:seg].mean(axis=0)
        for i in range(0, len(x) // seg, 3):
            ring, ring0 = x[i * seg:(i + 1) * seg], rest[i * seg:(i + 1) * seg]
            rad = np.hypot(ring[:, 0] - c[0], ring[:, 2] - c[2]).mean()
            rad0 = np.hypot(ring0[:, 0] - c[0], ring0[:, 2] - c[2]).mean()
            turn = np.unwrap(np.arctan2(ring[:, 2] - c[2], ring[:, 0] - c[0])) - np.unwrap(
                np.arctan2(ring0[:, 2] - c[2], ring0[:, 0] - c[0]))
            hoop = np.linalg.norm(np.roll(ring, -1, axis=0) - ring, axis=1).sum()
            hoop0 = np.linalg.norm(np.roll(ring0, -1, axis=0) - ring0, axis=1).sum()
            print(f"ring {i:2d}: y {ring[:, 1].mean():.3f} m (rest {ring0[:, 1].mean():.3f}), radius "
                  f"{rad:.3f} m (rest {rad0:.3f}), turn {np.degrees(turn.mean()):6.1f}°, hoop/rest {hoop/hoop0:.3f}")


if __name__ == "__main__":
    main()
