//! Placing flat pattern panels around a body before they are sewn.
//!
//! [`BodyFrame::measure`] reads the body's bounding shape from its rest mesh (closed, Y up,
//! standing, in metres): the torso's extent below the shoulders by horizontal rays from the
//! body's vertical axis (the first exit is the torso, not an arm beside it), the neck as the
//! narrowest section of the upper body, the shoulders where the section below it widens, and
//! each arm as the principal axis of the body's vertices beside the torso.
//!
//! [`place_panels`] then wraps each panel without stretching it (arc length for arc length):
//! the front and back panels onto an elliptic cylinder around the torso, clear of it by the
//! clearance, their tops just above the shoulders; a sleeve onto a cylinder around its arm,
//! its middle on the arm's outer side and its side edges facing the torso, moved down the arm
//! until it is clear of the body and of the torso's panels. Each panel's triangles are turned
//! so that their normals face away from the body.
//!
//! May import: [`crate::collide`], [`crate::mesh`], [`crate::math`], and the garment's own
//! modules.

use parry3d::query::{Ray, RayCast};
use parry3d::shape::{TriMesh, TriMeshFlags};

use crate::collide::BodyCollider;
use crate::garment::pattern::{Arrangement, Pattern};
use crate::math::{bounds, Real, Vec3};
use crate::mesh::Mesh;

/// Why panels cannot be placed around a body.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PlaceError {
    /// The body is not a standing humanoid this placement understands.
    #[error("body mesh '{name}': {problem}")]
    Body {
        /// Mesh name.
        name: String,
        /// What was found.
        problem: String,
    },
    /// A panel could not be placed clear of the body.
    #[error("panel '{panel}': {problem}")]
    Panel {
        /// The panel.
        panel: String,
        /// What went wrong.
        problem: String,
    },
}

/// An arm as [`BodyFrame::measure`] finds it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limb {
    /// Where the arm leaves the torso, on its axis (m).
    pub root_m: Vec3,
    /// Unit direction down the arm, toward the hand.
    pub dir: Vec3,
    /// The arm's radius near the shoulder (m).
    pub radius_m: Real,
}

/// The body's bounding shape, as the placement uses it.
#[derive(Clone, Debug, PartialEq)]
pub struct BodyFrame {
    /// Centre of the torso's horizontal extent (m): x and z.
    pub centre_m: [Real; 2],
    /// Half-extents of the torso along x and z below the shoulders (m).
    pub torso_half_m: [Real; 2],
    /// Height of the shoulders (m).
    pub shoulder_y_m: Real,
    /// Height of the narrowest section of the neck (m).
    pub neck_y_m: Real,
    /// The left (+x) and right (−x) arms.
    pub arms: [Option<Limb>; 2],
}

/// Horizontal rays per section.
const RAYS: usize = 24;

impl BodyFrame {
    /// Measures `body` (its rest mesh: closed, Y up, standing, metres).
    pub fn measure(body: &Mesh) -> Result<BodyFrame, PlaceError> {
        let fail = |problem: String| PlaceError::Body {
            name: body.name.clone(),
            problem,
        };
        let (lo, hi) =
            bounds(&body.positions).ok_or_else(|| fail("the mesh has no vertices".into()))?;
        let height = hi.y - lo.y;
        if height.is_nan() || height <= 0.1 {
            return Err(fail(format!(
                "it is {height:.3} m tall; a standing body in metres is expected"
            )));
        }
        let tri = TriMesh::with_flags(
            body.positions.clone(),
            body.indices.clone(),
            TriMeshFlags::empty(),
        )
        .map_err(|e| fail(format!("cannot be ray-cast: {e}")))?;
        let collider = BodyCollider::new(body).map_err(|e| fail(e.to_string()))?;
        let axis = crate::garment::fit::vertical_axis(body);
        // The section at height `y`: the exits of rays from the axis, as x and z ranges, or
        // `None` where the axis is outside the body.
        let section = |y: Real| -> Option<[Real; 4]> {
            let o = Vec3::new(axis.0, y, axis.1);
            if collider.closest(o).signed_distance_m >= 0.0 {
                return None;
            }
            let mut r = [Real::MAX, Real::MIN, Real::MAX, Real::MIN];
            for k in 0..RAYS {
                let a = k as Real / RAYS as Real * std::f32::consts::TAU as Real;
                let d = Vec3::new(a.cos(), 0.0, a.sin());
                let t = tri.cast_local_ray(&Ray::new(o, d), height, false)?;
                let p = o + d * t;
                r = [r[0].min(p.x), r[1].max(p.x), r[2].min(p.z), r[3].max(p.z)];
            }
            Some(r)
        };
        let at = |f: Real| lo.y + f * height;
        let steps = |from: Real, to: Real, n: usize| {
            (0..=n).map(move |k| from + (to - from) * k as Real / n as Real)
        };
        // The neck: the narrowest section of the upper body.
        let neck = steps(at(0.74), at(0.93), 76)
            .filter_map(|y| section(y).map(|s| (y, 0.5 * (s[1] - s[0]))))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .ok_or_else(|| {
                fail(format!(
                    "no neck found between {:.2} m and {:.2} m; is the body Y-up and standing?",
                    at(0.74),
                    at(0.93)
                ))
            })?;
        // The shoulders: going down from the neck, where the section has widened to 2.2 times.
        let shoulder_y = steps(neck.0, at(0.6), 80)
            .find(|&y| section(y).is_some_and(|s| 0.5 * (s[1] - s[0]) >= 2.2 * neck.1))
            .ok_or_else(|| {
                fail(format!(
                    "no shoulders found below the neck at {:.2} m (the section never widens)",
                    neck.0
                ))
            })?;
        // The torso below the shoulders (an arm beside it is behind the rays' first exit).
        let mut ext = [Real::MAX, Real::MIN, Real::MAX, Real::MIN];
        let mut found = 0;
        for y in steps(at(0.45), shoulder_y - 0.1 * height, 40) {
            if let Some(s) = section(y) {
                ext = [
                    ext[0].min(s[0]),
                    ext[1].max(s[1]),
                    ext[2].min(s[2]),
                    ext[3].max(s[3]),
                ];
                found += 1;
            }
        }
        if found < 5 {
            return Err(fail(format!(
                "no torso found below the shoulders at {shoulder_y:.2} m; is the body standing?"
            )));
        }
        let centre = [0.5 * (ext[0] + ext[1]), 0.5 * (ext[2] + ext[3])];
        let half = [0.5 * (ext[1] - ext[0]), 0.5 * (ext[3] - ext[2])];
        let arms = [1.0, -1.0].map(|side: Real| {
            arm(
                body,
                side,
                centre,
                half[0],
                [at(0.35), shoulder_y],
                shoulder_y,
            )
        });
        Ok(BodyFrame {
            centre_m: centre,
            torso_half_m: half,
            shoulder_y_m: shoulder_y,
            neck_y_m: neck.0,
            arms,
        })
    }
}

/// The arm on `side` (+1: +x): the principal axis of the vertices beside the torso (farther
/// than its half-width plus 2 cm from its centre) between the heights `band`.
fn arm(
    body: &Mesh,
    side: Real,
    centre: [Real; 2],
    half_x: Real,
    band: [Real; 2],
    shoulder_y: Real,
) -> Option<Limb> {
    let pts: Vec<Vec3> = (body.positions.iter().copied())
        .filter(|p| side * (p.x - centre[0]) > half_x + 0.02 && (band[0]..=band[1]).contains(&p.y))
        .collect();
    if pts.len() < 20 {
        return None;
    }
    let mean = pts.iter().fold(Vec3::ZERO, |s, &p| s + p) / pts.len() as Real;
    // The covariance's principal eigenvector, by power iteration.
    let cov = |v: Vec3| {
        pts.iter().fold(Vec3::ZERO, |s, &p| {
            let d = p - mean;
            s + d * d.dot(v)
        })
    };
    let mut dir = Vec3::new(side * 0.5, -1.0, 0.0).normalize();
    for _ in 0..50 {
        dir = cov(dir).try_normalize()?;
    }
    if dir.y > 0.0 {
        dir = -dir;
    }
    // Where the axis leaves the torso's side, or, for an arm hanging straight down, at the
    // shoulders' height.
    let t = if (side * dir.x) > 0.1 {
        (centre[0] + side * half_x - mean.x) / dir.x
    } else {
        (shoulder_y - mean.y) / dir.y
    };
    let root = mean + dir * t;
    let mut near: Vec<Real> = (pts.iter())
        .filter(|p| (**p - root).dot(dir) < 0.3)
        .map(|&p| {
            let d = p - root;
            (d - dir * d.dot(dir)).length()
        })
        .collect();
    near.sort_by(Real::total_cmp);
    let radius = *near.get(near.len() * 9 / 10)?;
    Some(Limb {
        root_m: root,
        dir,
        radius_m: radius,
    })
}

/// The panels of a pattern placed around a body.
#[derive(Clone, Debug)]
pub struct Placed {
    /// For each panel of the pattern, its vertices around the body (m); empty for a panel
    /// without an arrangement.
    pub positions: Vec<Vec<Vec3>>,
    /// Whether each panel's triangles are to be reversed so that they face away from the body.
    pub reversed: Vec<bool>,
}

/// An ellipse's points by arc length from a starting angle.
struct ArcTable {
    angle: Vec<Real>,
    arc: Vec<Real>,
}

impl ArcTable {
    /// The ellipse of semi-axes `a` (x), `b` (z), walked counter-clockwise (from +x toward +z)
    /// once around from angle `start`.
    fn new(a: Real, b: Real, start: Real) -> Self {
        let n: usize = 2048;
        let point = |t: Real| Vec3::new(a * t.cos(), 0.0, b * t.sin());
        // Both ways round: arc lengths from minus to plus the perimeter.
        let angle: Vec<Real> = (0..=2 * n)
            .map(|k| start + (k as Real - n as Real) / n as Real * std::f32::consts::TAU as Real)
            .collect();
        let mut arc = vec![0.0; 2 * n + 1];
        for k in (n + 1)..=(2 * n) {
            arc[k] = arc[k - 1] + point(angle[k]).distance(point(angle[k - 1]));
        }
        for k in (0..n).rev() {
            arc[k] = arc[k + 1] - point(angle[k]).distance(point(angle[k + 1]));
        }
        Self { angle, arc }
    }

    /// The angle at signed arc length `s` (m) from the start (positive: counter-clockwise).
    fn angle_at(&self, s: Real) -> Real {
        let k = self
            .arc
            .partition_point(|&a| a < s)
            .clamp(1, self.arc.len() - 1);
        let (s0, s1) = (self.arc[k - 1], self.arc[k]);
        let f = if s1 > s0 { (s - s0) / (s1 - s0) } else { 0.0 };
        self.angle[k - 1] + f.clamp(0.0, 1.0) * (self.angle[k] - self.angle[k - 1])
    }
}

/// Places every panel of `pattern` that has an arrangement around `body` (its rest mesh),
/// `clearance_m` (m) from it.
pub fn place_panels(
    pattern: &Pattern,
    body: &Mesh,
    frame: &BodyFrame,
    clearance_m: Real,
) -> Result<Placed, PlaceError> {
    let collider = BodyCollider::new(body).map_err(|e| PlaceError::Body {
        name: body.name.clone(),
        problem: e.to_string(),
    })?;
    let c = clearance_m.max(0.0);
    let [cx, cz] = frame.centre_m;
    let top_y = frame.shoulder_y_m + 2.0 * c;
    let clear_of_body = |x: &[Vec3]| {
        x.iter()
            .all(|&p| collider.closest(p).signed_distance_m >= 0.5 * c)
    };
    let mut positions = vec![Vec::new(); pattern.panels.len()];
    let mut reversed = vec![false; pattern.panels.len()];
    // The torso's cylinder, grown in 1 cm steps until every torso panel is clear of the body.
    let mut grow = 0.0;
    let torso: Vec<(usize, bool)> = (pattern.file.panels.iter().enumerate())
        .filter_map(|(i, p)| match p.place {
            Some(Arrangement::Front) => Some((i, true)),
            Some(Arrangement::Back) => Some((i, false)),
            _ => None,
        })
        .collect();
    let mut ellipse = [frame.torso_half_m[0] + c, frame.torso_half_m[1] + c];
    if !torso.is_empty() {
        'grow: loop {
            ellipse = [
                frame.torso_half_m[0] + c + grow,
                frame.torso_half_m[1] + c + grow,
            ];
            let [a, b] = ellipse;
            for &(i, front) in &torso {
                let mesh = &pattern.panels[i].mesh;
                let (lo, hi) = bounds(&mesh.positions).unwrap_or_default();
                let mid = 0.5 * (lo.x + hi.x);
                // Front: from +z, x to the body's left (+x: clockwise seen from above, toward
                // smaller angles); back: from −z, with x to +x as well (counter-clockwise).
                let table = if front {
                    ArcTable::new(a, b, std::f32::consts::FRAC_PI_2 as Real)
                } else {
                    ArcTable::new(a, b, -std::f32::consts::FRAC_PI_2 as Real)
                };
                let x: Vec<Vec3> = (mesh.positions.iter())
                    .map(|p| {
                        let s = if front { -(p.x - mid) } else { p.x - mid };
                        let t = table.angle_at(s);
                        Vec3::new(cx + a * t.cos(), top_y - (hi.y - p.y), cz + b * t.sin())
                    })
                    .collect();
                positions[i] = x;
            }
            if torso.iter().all(|&(i, _)| clear_of_body(&positions[i])) {
                break 'grow;
            }
            grow += 0.01;
            if grow > 0.2 {
                let i = (torso.iter())
                    .map(|&(i, _)| i)
                    .find(|&i| !clear_of_body(&positions[i]))
                    .unwrap_or(torso[0].0);
                return Err(PlaceError::Panel {
                    panel: pattern.panels[i].name.clone(),
                    problem: "no cylinder around the torso up to 20 cm wider than it keeps the \
                              panel clear of the body (is the body standing, arms away from \
                              the torso?)"
                        .into(),
                });
            }
        }
    }
    let inside_torso_cylinder = |p: Vec3| {
        !torso.is_empty()
            && p.y <= top_y + c
            && ((p.x - cx) / (ellipse[0] + c)).powi(2) + ((p.z - cz) / (ellipse[1] + c)).powi(2)
                <= 1.0
    };
    for (i, spec) in pattern.file.panels.iter().enumerate() {
        let side = match spec.place {
            Some(Arrangement::LeftArm) => 0,
            Some(Arrangement::RightArm) => 1,
            _ => continue,
        };
        let panel = &pattern.panels[i];
        let limb = frame.arms[side].ok_or_else(|| PlaceError::Panel {
            panel: panel.name.clone(),
            problem: format!(
                "the body has no {} arm beside its torso to place the sleeve on",
                ["left", "right"][side]
            ),
        })?;
        let d = limb.dir;
        let e1 = (Vec3::Y - d * d.dot(Vec3::Y))
            .try_normalize()
            .unwrap_or(Vec3::X * if side == 0 { 1.0 } else { -1.0 });
        let e2 = (Vec3::Z - d * d.dot(Vec3::Z) - e1 * e1.dot(Vec3::Z))
            .try_normalize()
            .unwrap_or(d.cross(e1));
        let mesh = &panel.mesh;
        let (lo, hi) = bounds(&mesh.positions).unwrap_or_default();
        let mid = 0.5 * (lo.x + hi.x);
        let width = hi.x - lo.x;
        let tau = std::f32::consts::TAU as Real;
        let radius = (limb.radius_m + 2.0 * c).max(width / (tau - 0.5));
        let mut t0 = 0.0;
        loop {
            let x: Vec<Vec3> = (mesh.positions.iter())
                .map(|p| {
                    let th = (p.x - mid) / radius;
                    limb.root_m + d * (t0 + hi.y - p.y) + (e1 * th.cos() + e2 * th.sin()) * radius
                })
                .collect();
            if clear_of_body(&x) && !x.iter().any(|&p| inside_torso_cylinder(p)) {
                positions[i] = x;
                break;
            }
            t0 += 0.01;
            if t0 > 0.5 {
                return Err(PlaceError::Panel {
                    panel: panel.name.clone(),
                    problem: "no place along the arm, up to 50 cm from the shoulder, keeps the \
                              sleeve clear of the body and the torso's panels"
                        .into(),
                });
            }
        }
    }
    // Turn each panel to face away from the body: its area-weighted normals against the
    // directions from the body's axis.
    for (i, x) in positions.iter().enumerate() {
        if x.is_empty() {
            continue;
        }
        let limb = match pattern.file.panels[i].place {
            Some(Arrangement::LeftArm) => frame.arms[0],
            Some(Arrangement::RightArm) => frame.arms[1],
            _ => None,
        };
        let outward = |p: Vec3| match limb {
            Some(l) => {
                let r = p - l.root_m;
                r - l.dir * r.dot(l.dir)
            }
            None => Vec3::new(p.x - cx, 0.0, p.z - cz),
        };
        let facing: Real = (pattern.panels[i].mesh.indices.iter())
            .map(|t| {
                let [a, b, d] = t.map(|k| x[k as usize]);
                (b - a).cross(d - a).dot(outward((a + b + d) / 3.0))
            })
            .sum();
        reversed[i] = facing < 0.0;
    }
    Ok(Placed {
        positions,
        reversed,
    })
}
