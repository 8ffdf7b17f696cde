//! Garments fitted to any body: finding a body's waist and hanging a skirt from it.
//!
//! The body is a closed mesh, Y up, standing at its rest pose (for a skinned character, the
//! bind pose its garments are authored on). [`find_waist`] scans horizontal slices of the
//! torso for the narrowest one; [`fit_skirt`] hangs a flared skirt from it with
//! [`crate::mesh::shapes::skirt_around`], every ring kept clear of the body by the body's own signed
//! distance (parry3d's point projection).

use crate::collide::BodyCollider;
use crate::math::{bounds, Real, Vec3};
use crate::mesh::shapes::{skirt_around, Garment, SkirtParams, Waist};
use crate::mesh::Mesh;

/// Why a garment cannot be fitted to a body.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum FitError {
    /// The body mesh cannot be used (empty, open, degenerate).
    #[error("body mesh '{name}': {problem}")]
    Body {
        /// Mesh name.
        name: String,
        /// What is wrong.
        problem: String,
    },
    /// The body is not standing: it is longer than it is tall (a quadruped, or a figure lying
    /// down or not Y-up).
    #[error("body mesh '{name}' is {height_m:.2} m tall and {length_m:.2} m long: it lies along the ground (a quadruped, or not Y-up); a fitted garment needs a standing, Y-up humanoid")]
    NotStanding {
        /// Mesh name.
        name: String,
        /// Its rest-pose height (m).
        height_m: Real,
        /// Its largest horizontal extent (m).
        length_m: Real,
    },
    /// The body has no legs: no horizontal section in [`CROTCH_SEARCH`] parts into two.
    #[error("body mesh '{name}' ({height_m:.2} m tall): found no crotch, where the sections between {from_m:.2} m and {to_m:.2} m should part into two legs; a fitted skirt needs a standing humanoid{hint}")]
    NoLegs {
        /// Mesh name.
        name: String,
        /// Its rest-pose height (m).
        height_m: Real,
        /// Lowest height searched (m).
        from_m: Real,
        /// Highest height searched (m).
        to_m: Real,
        /// A unit hint for a body of implausible size, or empty.
        hint: String,
    },
    /// No torso slice was found where the waist should be.
    #[error("body mesh '{name}': no torso found between heights {from_m:.2} m and {to_m:.2} m; is the body Y-up, standing, and modelled in metres?")]
    NoWaist {
        /// Mesh name.
        name: String,
        /// Lowest height searched (m).
        from_m: Real,
        /// Highest height searched (m).
        to_m: Real,
    },
}

/// Where [`find_waist`] looks for the crotch, as fractions of the body's height above its
/// lowest point.
pub const CROTCH_SEARCH: (Real, Real) = (0.3, 0.7);
/// Where [`find_waist`] looks for the waist, as fractions of the body's height above the
/// crotch: the natural waist lies about 0.1 of the height above it (0.12 on an adult, less on
/// stylised characters).
pub const WAIST_ABOVE_CROTCH: (Real, Real) = (0.04, 0.16);

/// A body shorter than this fraction of its largest horizontal extent is not standing
/// ([`FitError::NotStanding`]).
pub const MIN_STANDING_ASPECT: Real = 0.8;

/// Vertices of a slice farther than this from its median centre (horizontally) are not torso
/// (arms, hands) (m).
const TORSO_RADIUS_M: Real = 0.3;

/// The narrowest horizontal torso slice of `body` just above its crotch: its centre and
/// half-extents along x and z.
///
/// The crotch is the lowest slice (within [`CROTCH_SEARCH`]) whose centre is inside the body:
/// below it the centre falls between the legs. The waist is the narrowest slice within
/// [`WAIST_ABOVE_CROTCH`] above that, so a narrow chest (stylised characters often have one)
/// is not taken for it. The body must be closed.
pub fn find_waist(body: &Mesh) -> Result<Waist, FitError> {
    find_waist_in(body, &closed_collider(body)?)
}

/// [`find_waist`] with the body's (closed) collider already built.
fn find_waist_in(body: &Mesh, collider: &BodyCollider) -> Result<Waist, FitError> {
    let (lo, hi) = bounds(&body.positions).ok_or_else(|| FitError::Body {
        name: body.name.clone(),
        problem: "the mesh has no vertices".into(),
    })?;
    let height = hi.y - lo.y;
    // A standing figure is at least about as tall as it is long, arms spread included (a
    // T-pose's span is about its height); a fox on all fours is half as tall as it is long.
    let length = (hi.x - lo.x).max(hi.z - lo.z);
    if height < MIN_STANDING_ASPECT * length {
        return Err(FitError::NotStanding {
            name: body.name.clone(),
            height_m: height,
            length_m: length,
        });
    }
    let axis = vertical_axis(body);
    let torso_at = |y: Real| {
        slice(body, y, axis).filter(|w| {
            let centre = Vec3::new(w.centre_x_m, y, w.centre_z_m);
            collider.closest(centre).signed_distance_m < 0.0
        })
    };
    let heights = |from: Real, to: Real| {
        // 5 mm steps, at most 400 slices (a body far larger than a person, e.g. modelled in
        // centimetres, is scanned coarser instead of for ever).
        let steps = ((to - from) / 0.005).ceil().clamp(1.0, 400.0) as usize;
        (0..=steps).map(move |k| from + (to - from) * k as Real / steps as Real)
    };
    // The crotch is where the legs join: below it the section's centre falls between them.
    // A body whose section is whole already at the search's start has no legs there (a
    // cylinder, a robe).
    let mut searched = heights(
        lo.y + CROTCH_SEARCH.0 * height,
        lo.y + CROTCH_SEARCH.1 * height,
    );
    let legs_apart = searched.next().is_some_and(|y| torso_at(y).is_none());
    let crotch = legs_apart
        .then(|| searched.find(|&y| torso_at(y).is_some()))
        .flatten();
    let (from, to) = match crotch {
        Some(c) => (
            c + WAIST_ABOVE_CROTCH.0 * height,
            c + WAIST_ABOVE_CROTCH.1 * height,
        ),
        None => {
            let hint = if !(0.3..=3.0).contains(&height) {
                format!(
                    " (is it in metres? a person is 1–2 m tall; set the body's unit_scale, \
                     e.g. {})",
                    // The power of ten to about 1.7 m (as the scene's own suggestion).
                    10f64.powi((1.7 / height as f64).log10().round() as i32) as Real
                )
            } else {
                String::new()
            };
            return Err(FitError::NoLegs {
                name: body.name.clone(),
                height_m: height,
                from_m: lo.y + CROTCH_SEARCH.0 * height,
                to_m: lo.y + CROTCH_SEARCH.1 * height,
                hint,
            });
        }
    };
    let mut best: Option<(Real, Waist)> = None;
    for y in heights(from, to) {
        if let Some(w) = torso_at(y) {
            let area = w.radius_x_m * w.radius_z_m;
            if best.as_ref().is_none_or(|(a, _)| area < *a) {
                best = Some((area, w));
            }
        }
    }
    best.map(|(_, w)| w).ok_or(FitError::NoWaist {
        name: body.name.clone(),
        from_m: from,
        to_m: to,
    })
}

/// The body's vertical axis `(x, z)`: the median of its vertices. Slices keep only the points
/// near it (the torso), not the arms or hands that reach the same height.
pub(crate) fn vertical_axis(body: &Mesh) -> (Real, Real) {
    let median = |f: fn(&Vec3) -> Real| {
        let mut v: Vec<Real> = body.positions.iter().map(f).collect();
        v.sort_by(Real::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(0.0)
    };
    (median(|p| p.x), median(|p| p.z))
}

/// The torso slice of `body` at height `y_m` (m), as [`find_waist`] measures it.
pub fn waist_at(body: &Mesh, y_m: Real) -> Result<Waist, FitError> {
    slice(body, y_m, vertical_axis(body)).ok_or(FitError::NoWaist {
        name: body.name.clone(),
        from_m: y_m,
        to_m: y_m,
    })
}

/// The body's collider, which must be closed.
fn closed_collider(body: &Mesh) -> Result<BodyCollider, FitError> {
    if body.positions.is_empty() {
        return Err(FitError::Body {
            name: body.name.clone(),
            problem: "the mesh has no vertices".into(),
        });
    }
    let collider = BodyCollider::new(body).map_err(|e| FitError::Body {
        name: body.name.clone(),
        problem: e.to_string(),
    })?;
    if !collider.is_closed() {
        return Err(FitError::Body {
            name: body.name.clone(),
            problem: "the mesh is not closed, so its inside is not defined".into(),
        });
    }
    Ok(collider)
}

/// The torso ellipse of the cross-section of `body` by the plane at height `y`: the points
/// where triangle edges cross the plane (so the result does not depend on where the vertices
/// happen to lie), keeping those within [`TORSO_RADIUS_M`] of the vertical `axis` `(x, z)`.
fn slice(body: &Mesh, y: Real, axis: (Real, Real)) -> Option<Waist> {
    let mut torso: Vec<Vec3> = Vec::new();
    for t in &body.indices {
        for k in 0..3 {
            let (a, b) = (
                body.positions[t[k] as usize],
                body.positions[t[(k + 1) % 3] as usize],
            );
            if (a.y < y) == (b.y < y) {
                continue;
            }
            let p = a.lerp(b, (y - a.y) / (b.y - a.y));
            if (p.x - axis.0).hypot(p.z - axis.1) <= TORSO_RADIUS_M {
                torso.push(p);
            }
        }
    }
    if torso.len() < 8 {
        return None;
    }
    let (mut x0, mut x1, mut z0, mut z1) = (Real::MAX, Real::MIN, Real::MAX, Real::MIN);
    for p in &torso {
        x0 = x0.min(p.x);
        x1 = x1.max(p.x);
        z0 = z0.min(p.z);
        z1 = z1.max(p.z);
    }
    Some(Waist {
        height_m: y,
        centre_x_m: 0.5 * (x0 + x1),
        centre_z_m: 0.5 * (z0 + z1),
        radius_x_m: 0.5 * (x1 - x0),
        radius_z_m: 0.5 * (z1 - z0),
    })
}

/// A flared skirt around `body`'s waist ([`find_waist`]), clear of the body by
/// `params.clearance_m`; its waistband (the returned `pinned` vertices) is meant to be pinned
/// to the body. The body must be closed, so that its signed distance is defined.
///
/// `waist_height_m` places the waistband at that height (m) instead of [`find_waist`]'s.
pub fn fit_skirt(
    body: &Mesh,
    params: &SkirtParams,
    waist_height_m: Option<Real>,
) -> Result<Garment, FitError> {
    let collider = closed_collider(body)?;
    let waist = match waist_height_m {
        Some(y) => waist_at(body, y)?,
        None => find_waist_in(body, &collider)?,
    };
    let sdf = |p: Vec3| collider.closest(p).signed_distance_m;
    Ok(skirt_around(params, &waist, &sdf))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::shapes::{
        mannequin, MANNEQUIN_WAIST_HEIGHT_M, MANNEQUIN_WAIST_RADIUS_X_M, MANNEQUIN_WAIST_RADIUS_Z_M,
    };

    #[test]
    fn finds_the_mannequins_waist() {
        let body = mannequin();
        let w = find_waist(&body).unwrap();
        assert!(
            (w.height_m - MANNEQUIN_WAIST_HEIGHT_M).abs() < 0.06,
            "waist at {} m",
            w.height_m
        );
        // The slice's extents are the mannequin's waist ellipse, within the mesh resolution.
        assert!(
            (w.radius_x_m - MANNEQUIN_WAIST_RADIUS_X_M).abs() < 0.02,
            "{w:?}"
        );
        assert!(
            (w.radius_z_m - MANNEQUIN_WAIST_RADIUS_Z_M).abs() < 0.02,
            "{w:?}"
        );
    }

    #[test]
    fn fitted_skirt_clears_the_body() {
        let body = mannequin();
        let params = SkirtParams {
            rings: 8,
            segments: 24,
            ..Default::default()
        };
        let g = fit_skirt(&body, &params, None).unwrap();
        let collider = BodyCollider::new(&body).unwrap();
        for p in &g.mesh.positions {
            assert!(collider.closest(*p).signed_distance_m >= params.clearance_m - 1e-4);
        }
        assert_eq!(g.pinned.len(), 24);
    }

    #[test]
    fn open_or_empty_bodies_are_refused() {
        let empty = Mesh::new("nothing", Vec::new(), Vec::new());
        assert!(matches!(find_waist(&empty), Err(FitError::Body { .. })));
        let tri = Mesh::new("sheet", vec![Vec3::ZERO, Vec3::X, Vec3::Y], vec![[0, 1, 2]]);
        let e = fit_skirt(&tri, &SkirtParams::default(), None).unwrap_err();
        assert!(e.to_string().contains("not closed"), "{e}");
    }
}
