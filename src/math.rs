//! Scalar and vector types shared by the whole crate.
//!
//! Drape computes in single precision: [`Real`] is `f32`. The vector types are the glam types
//! that parry3d 0.31 is built on (re-exported through `parry3d::math`), so positions pass to the
//! collision queries without conversion. Change [`Real`] and the aliases together to move the
//! crate to another precision.

pub use parry3d::math::{Mat3, Vec2, Vec3};

/// The floating-point type of every physical quantity in Drape.
pub type Real = f32;

/// Squared length below which a direction is treated as undefined (m²).
///
/// Two particles closer than `sqrt(DEGENERATE_LENGTH_SQ)` ≈ 1e-6 m (a micrometre) are
/// coincident for the solver: a constraint that needs the direction between them is skipped.
pub const DEGENERATE_LENGTH_SQ: Real = 1.0e-12;

/// Squared length of a triangle's doubled area vector below which the triangle is degenerate (m⁴).
pub const DEGENERATE_AREA2_SQ: Real = 1.0e-20;

/// Area below which a triangle is degenerate (m²): the same threshold as
/// [`DEGENERATE_AREA2_SQ`], `sqrt(1e-20) / 2`. The quality report, the constraint builder and
/// the solver all use it, so every triangle the solver skips is reported.
pub const DEGENERATE_AREA_M2: Real = 5.0e-11;

/// Area of the triangle `a b c` (m²).
#[inline]
pub fn triangle_area(a: Vec3, b: Vec3, c: Vec3) -> Real {
    0.5 * (b - a).cross(c - a).length()
}

/// Axis-aligned bounds of a point set: `(min, max)`, or `None` for an empty set.
pub fn bounds(points: &[Vec3]) -> Option<(Vec3, Vec3)> {
    let first = *points.first()?;
    Some(
        points
            .iter()
            .fold((first, first), |(lo, hi), p| (lo.min(*p), hi.max(*p))),
    )
}
