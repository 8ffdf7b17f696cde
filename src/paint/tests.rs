//! Brush maths (issue 7, "Brush maths") and undo/redo.

use super::*;
use crate::math::{Real, Vec3};
use crate::mesh::shapes::grid_cloth;
use crate::mesh::Mesh;

/// A 1 m grid of `n × n` vertices in the plane y = 0, centred on the origin.
fn grid(n: u32) -> (Mesh, PaintMesh) {
    let m = grid_cloth(1.0, n, 0.0);
    let p = PaintMesh::new(&m, DEFAULT_MIRROR_TOLERANCE_M);
    (m, p)
}

fn bits(v: &[Real]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn a_stroke_changes_only_vertices_within_the_radius() {
    let (m, p) = grid(41);
    let mut maps = VertexMaps::new(m.positions.len());
    let brush = Brush {
        radius_m: 0.12,
        strength: 1.0,
        falloff: Falloff::Linear,
        mode: BrushMode::Add,
        value: 0.5,
        mirror_x: false,
    };
    let centres = [Vec3::new(0.1, 0.0, 0.0), Vec3::new(0.2, 0.01, 0.05)];
    let mut stroke = Stroke::new(MapKind::Attachment);
    for c in centres {
        stroke.dab(&p, &mut maps, &brush, c).unwrap();
    }
    let w = maps.get(MapKind::Attachment);
    let mut inside = 0;
    for (i, x) in m.positions.iter().enumerate() {
        let near = centres.iter().any(|c| x.distance(*c) < brush.radius_m);
        if near {
            inside += 1;
            assert!(
                w[i] > 0.0,
                "vertex {i} at {x} inside the radius was not painted"
            );
        } else {
            assert_eq!(w[i], 0.0, "vertex {i} at {x} outside the radius changed");
        }
    }
    assert!(inside > 20, "{inside} vertices inside");
    let edit = stroke.finish(&maps);
    assert_eq!(edit.vertices.len(), inside);
}

#[test]
fn the_falloff_profiles_are_right() {
    for (falloff, expected) in [
        (Falloff::Smooth, [1.0, 0.84375, 0.5, 0.0, 0.0]),
        (Falloff::Linear, [1.0, 0.75, 0.5, 0.0, 0.0]),
        (Falloff::Constant, [1.0, 1.0, 1.0, 0.0, 0.0]),
    ] {
        for (t, e) in [0.0, 0.25, 0.5, 1.0, 1.5].into_iter().zip(expected) {
            approx::assert_relative_eq!(falloff.weight(t * 0.2, 0.2), e, epsilon = 1e-6);
        }
        // Monotone from the centre to the rim.
        let mut last = 1.0;
        for k in 0..=100 {
            let f = falloff.weight(k as Real * 0.002, 0.2);
            assert!(f <= last + 1e-7 && (0.0..=1.0).contains(&f));
            last = f;
        }
    }
    // On a mesh: a replace dab to 1 at strength 1 writes exactly the profile.
    let (m, p) = grid(21);
    for falloff in [Falloff::Smooth, Falloff::Linear, Falloff::Constant] {
        let mut maps = VertexMaps::new(m.positions.len());
        let brush = Brush {
            radius_m: 0.3,
            strength: 1.0,
            falloff,
            mode: BrushMode::Replace,
            value: 1.0,
            mirror_x: false,
        };
        let c = Vec3::new(0.02, 0.0, -0.03);
        Stroke::new(MapKind::Attachment)
            .dab(&p, &mut maps, &brush, c)
            .unwrap();
        for (x, &w) in m.positions.iter().zip(maps.get(MapKind::Attachment)) {
            approx::assert_relative_eq!(w, falloff.weight(x.distance(c), 0.3), epsilon = 1e-6);
        }
    }
    // Strength scales the factor.
    let mut maps = VertexMaps::new(m.positions.len());
    let brush = Brush {
        radius_m: 0.3,
        strength: 0.25,
        falloff: Falloff::Constant,
        mode: BrushMode::Add,
        value: 2.0,
        mirror_x: false,
    };
    Stroke::new(MapKind::StretchScale)
        .dab(&p, &mut maps, &brush, Vec3::ZERO)
        .unwrap();
    let centre = m.positions.iter().position(|x| x.length() < 1e-6).unwrap();
    assert_eq!(maps.get(MapKind::StretchScale)[centre], 1.5);
}

#[test]
fn mirror_maps_each_vertex_to_its_mirrored_vertex() {
    let (m, p) = grid(21);
    let mut maps = VertexMaps::new(m.positions.len());
    let brush = Brush {
        radius_m: 0.1,
        strength: 0.7,
        falloff: Falloff::Smooth,
        mode: BrushMode::Add,
        value: 1.0,
        mirror_x: true,
    };
    Stroke::new(MapKind::Attachment)
        .dab(&p, &mut maps, &brush, Vec3::new(0.3, 0.0, 0.12))
        .unwrap();
    let w = maps.get(MapKind::Attachment);
    let mut mirrored = 0;
    for (i, x) in m.positions.iter().enumerate() {
        let j = p
            .mirror_of(i as u32)
            .expect("a symmetric grid mirrors every vertex");
        assert!((m.positions[j as usize] - *x * Vec3::new(-1.0, 1.0, 1.0)).length() < 1e-5);
        assert_eq!(w[i], w[j as usize], "vertex {i} and its mirror {j}");
        if w[i] > 0.0 && x.x < 0.0 {
            mirrored += 1;
        }
    }
    assert!(mirrored > 0, "the mirrored side was painted");
    // Without mirror the other side stays unpainted.
    let mut maps = VertexMaps::new(m.positions.len());
    Stroke::new(MapKind::Attachment)
        .dab(
            &p,
            &mut maps,
            &Brush {
                mirror_x: false,
                ..brush
            },
            Vec3::new(0.3, 0.0, 0.12),
        )
        .unwrap();
    assert!(m
        .positions
        .iter()
        .zip(maps.get(MapKind::Attachment))
        .all(|(x, &w)| x.x > 0.0 || w == 0.0));
    // An asymmetric vertex has no partner beyond the tolerance.
    let mut lop = m.clone();
    lop.positions[0].x -= 0.2;
    let lp = PaintMesh::new(&lop, 0.01);
    assert_eq!(lp.mirror_of(0), None);
}

#[test]
fn smooth_preserves_a_constant_map() {
    let (m, p) = grid(17);
    for value in [0.1 as Real, 0.3, 1.0 / 3.0, 0.7777] {
        let mut maps = VertexMaps::new(m.positions.len());
        maps.get_mut(MapKind::Attachment).fill(value);
        maps.get_mut(MapKind::BendScale).fill(value * 37.0);
        let before = maps.clone();
        for kind in [MapKind::Attachment, MapKind::BendScale] {
            let mut stroke = Stroke::new(kind);
            for k in 0..5 {
                let changed = stroke
                    .dab(
                        &p,
                        &mut maps,
                        &Brush {
                            radius_m: 0.4,
                            strength: 1.0,
                            falloff: Falloff::Smooth,
                            mode: BrushMode::Smooth,
                            value: 0.0,
                            mirror_x: k % 2 == 0,
                        },
                        Vec3::new(-0.2 + 0.1 * k as Real, 0.0, 0.1),
                    )
                    .unwrap();
                assert_eq!(changed, 0);
            }
            assert!(stroke.finish(&maps).is_empty());
        }
        for kind in MapKind::ALL {
            assert_eq!(bits(maps.get(kind)), bits(before.get(kind)));
        }
    }
    // And it does smooth a spike.
    let mut maps = VertexMaps::new(m.positions.len());
    let centre = m.positions.iter().position(|x| x.length() < 1e-6).unwrap();
    maps.get_mut(MapKind::Attachment)[centre] = 1.0;
    Stroke::new(MapKind::Attachment)
        .dab(
            &p,
            &mut maps,
            &Brush {
                radius_m: 0.2,
                strength: 1.0,
                falloff: Falloff::Constant,
                mode: BrushMode::Smooth,
                value: 0.0,
                mirror_x: false,
            },
            Vec3::ZERO,
        )
        .unwrap();
    let w = maps.get(MapKind::Attachment);
    assert_eq!(w[centre], 0.0);
    assert!(w.iter().filter(|&&v| v > 0.0).count() >= 4);
}

/// Two grids side by side (x < −0.05 and x > 0.05), the right one with its middle column of
/// vertices duplicated as a UV seam.
fn two_islands() -> Mesh {
    let mut left = grid_cloth(0.5, 6, 0.0);
    for x in &mut left.positions {
        x.x -= 0.3;
    }
    let mut right = grid_cloth(0.5, 6, 0.0);
    for x in &mut right.positions {
        x.x += 0.3;
    }
    // Split the right grid along its third column: triangles right of it use copies.
    let n = 6u32;
    let mut copies = std::collections::HashMap::new();
    for t in &mut right.indices {
        let right_side = t.iter().any(|&i| i % n > 2);
        if right_side {
            for i in t.iter_mut() {
                if *i % n == 2 {
                    let p = right.positions[*i as usize];
                    let uv = right.uvs.as_ref().unwrap()[*i as usize];
                    let next = right.positions.len() as u32;
                    let c = *copies.entry(*i).or_insert_with(|| {
                        right.positions.push(p);
                        right.uvs.as_mut().unwrap().push(uv);
                        next
                    });
                    *i = c;
                }
            }
        }
    }
    right.normals = None;
    let mut m = left;
    m.normals = None;
    m.append(&right);
    m
}

#[test]
fn flood_fill_stops_at_the_edge_of_the_connected_component() {
    let m = two_islands();
    m.validate().unwrap();
    let p = PaintMesh::new(&m, DEFAULT_MIRROR_TOLERANCE_M);
    let mut maps = VertexMaps::new(m.positions.len());
    let brush = Brush {
        radius_m: 0.01,
        strength: 1.0,
        falloff: Falloff::Smooth,
        mode: BrushMode::Replace,
        value: 1.0,
        mirror_x: false,
    };
    // Seed in the right island, left of its seam: the fill crosses the seam.
    let seed = 36;
    assert!(m.positions[seed].x > 0.0);
    let mut stroke = Stroke::new(MapKind::Attachment);
    stroke.flood(&p, &mut maps, &brush, seed as u32).unwrap();
    for (x, &w) in m.positions.iter().zip(maps.get(MapKind::Attachment)) {
        assert_eq!(w, if x.x > 0.0 { 1.0 } else { 0.0 }, "at {x}");
    }
    assert!(m.positions.len() > 72, "the seam duplicates exist");
    // With mirror, the left island (the mirror image of the right one) fills too.
    let mut maps = VertexMaps::new(m.positions.len());
    Stroke::new(MapKind::Attachment)
        .flood(
            &p,
            &mut maps,
            &Brush {
                mirror_x: true,
                ..brush
            },
            seed as u32,
        )
        .unwrap();
    assert!(maps.get(MapKind::Attachment).iter().all(|&w| w == 1.0));
    let e = Stroke::new(MapKind::Attachment)
        .flood(&p, &mut maps, &brush, 100_000)
        .unwrap_err();
    assert!(matches!(e, BrushError::Vertex { .. }));
}

#[test]
fn undo_restores_the_map_bitwise_and_redo_reapplies_it() {
    let (m, p) = grid(33);
    let mut maps = VertexMaps::new(m.positions.len());
    // A non-trivial start: values with awkward bits.
    for (i, v) in maps.get_mut(MapKind::StretchScale).iter_mut().enumerate() {
        *v = 1.0 + (i as Real * 0.37).sin() * 0.3;
    }
    let start = maps.clone();
    let mut history = History::default();
    let mut states = vec![maps.clone()];
    let modes = [
        BrushMode::Add,
        BrushMode::Smooth,
        BrushMode::Replace,
        BrushMode::Subtract,
    ];
    for (k, mode) in modes.into_iter().enumerate() {
        let brush = Brush {
            radius_m: 0.15,
            strength: 0.6,
            falloff: Falloff::Smooth,
            mode,
            value: 0.7,
            mirror_x: k % 2 == 1,
        };
        let mut stroke = Stroke::new(MapKind::StretchScale);
        for d in 0..6 {
            let c = Vec3::new(-0.3 + 0.1 * d as Real, 0.0, 0.05 * k as Real);
            stroke.dab(&p, &mut maps, &brush, c).unwrap();
        }
        let edit = stroke.finish(&maps);
        assert!(!edit.is_empty());
        history.push(edit);
        states.push(maps.clone());
    }
    let mut flood = Stroke::new(MapKind::Attachment);
    flood
        .flood(
            &p,
            &mut maps,
            &Brush {
                mode: BrushMode::Replace,
                value: 0.25,
                strength: 1.0,
                ..Brush::default()
            },
            0,
        )
        .unwrap();
    history.push(flood.finish(&maps));
    states.push(maps.clone());
    for k in (0..states.len() - 1).rev() {
        assert!(history.undo(&mut maps));
        for kind in MapKind::ALL {
            assert_eq!(
                bits(maps.get(kind)),
                bits(states[k].get(kind)),
                "undo to state {k}"
            );
        }
    }
    assert!(!history.undo(&mut maps));
    assert_eq!(maps, start);
    for (k, state) in states.iter().enumerate().skip(1) {
        assert!(history.redo(&mut maps));
        for kind in MapKind::ALL {
            assert_eq!(
                bits(maps.get(kind)),
                bits(state.get(kind)),
                "redo to state {k}"
            );
        }
    }
    assert!(!history.redo(&mut maps));
}

#[test]
fn bad_brushes_and_mismatched_maps_are_errors() {
    let (m, p) = grid(5);
    let mut maps = VertexMaps::new(m.positions.len());
    let mut stroke = Stroke::new(MapKind::Attachment);
    for brush in [
        Brush {
            radius_m: 0.0,
            ..Brush::default()
        },
        Brush {
            radius_m: Real::NAN,
            ..Brush::default()
        },
        Brush {
            strength: 1.5,
            ..Brush::default()
        },
        Brush {
            value: Real::INFINITY,
            ..Brush::default()
        },
    ] {
        assert!(stroke.dab(&p, &mut maps, &brush, Vec3::ZERO).is_err());
    }
    assert!(matches!(
        stroke.dab(&p, &mut maps, &Brush::default(), Vec3::NAN),
        Err(BrushError::Centre(_))
    ));
    let mut short = VertexMaps::new(3);
    assert!(matches!(
        stroke.dab(&p, &mut short, &Brush::default(), Vec3::ZERO),
        Err(BrushError::Mismatch { maps: 3, mesh: 25 })
    ));
    assert_eq!(maps, VertexMaps::new(25));
}

#[test]
fn values_stay_in_the_map_range() {
    let (m, p) = grid(9);
    let mut maps = VertexMaps::new(m.positions.len());
    let brush = Brush {
        radius_m: 2.0,
        strength: 1.0,
        falloff: Falloff::Constant,
        mode: BrushMode::Add,
        value: 5.0,
        mirror_x: false,
    };
    let mut s = Stroke::new(MapKind::Attachment);
    s.dab(&p, &mut maps, &brush, Vec3::ZERO).unwrap();
    assert!(maps.get(MapKind::Attachment).iter().all(|&w| w == 1.0));
    let mut s = Stroke::new(MapKind::MassScale);
    s.dab(
        &p,
        &mut maps,
        &Brush {
            mode: BrushMode::Subtract,
            ..brush
        },
        Vec3::ZERO,
    )
    .unwrap();
    assert!(maps
        .get(MapKind::MassScale)
        .iter()
        .all(|&w| w == MIN_MASS_SCALE));
    maps.validate("g", m.positions.len()).unwrap();
}

#[test]
fn ray_cast_finds_the_surface_and_its_nearest_vertex() {
    let (m, p) = grid(11);
    let hit = p
        .ray_cast(Vec3::new(0.21, 1.0, -0.09), Vec3::new(0.0, -2.0, 0.0))
        .unwrap();
    assert!((hit.point_m - Vec3::new(0.21, 0.0, -0.09)).length() < 1e-5);
    approx::assert_relative_eq!(hit.distance_m, 1.0, epsilon = 1e-5);
    assert!((m.positions[hit.vertex as usize] - Vec3::new(0.2, 0.0, -0.1)).length() < 1e-5);
    // From below, too; and a miss is None.
    assert!(p.ray_cast(Vec3::new(0.0, -1.0, 0.0), Vec3::Y).is_some());
    assert!(p.ray_cast(Vec3::new(3.0, 1.0, 0.0), -Vec3::Y).is_none());
    assert!(p.ray_cast(Vec3::ZERO, Vec3::ZERO).is_none());
}
