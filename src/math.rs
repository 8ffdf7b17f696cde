//! Scalar and vector types shared by the whole crate.
//!
//! Drape computes in single precision: [`Real`] is `f32`. The vector types are the glam types
//! that parry3d 0.31 is built on (re-exported through `parry3d::math`), so positions pass to the
//! collision queries without conversion. Change [`Real`] and the aliases together to move the
//! crate to another precision.

pub use parry3d::math::{Mat3, Vec2, Vec3, Vec4};

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

/// `atan2(y, x)` in `[−π, π]`, within 3·10⁻⁷ rad of the exact angle (about one ulp of π in
/// f32; measured 2.7·10⁻⁷), inlined: the
/// bending constraint evaluates one per hinge per sweep, and the C library's `atan2f` took
/// about a tenth of a standard-scene frame.
///
/// Octant reduction to `t = min/max ∈ [0, 1]`, then `atan t = π/4 + atan((t − 1)/(t + 1))` above
/// `tan(π/8)`, and the minimax polynomial of Cephes' `atanf` (S. Moshier) on `|t| ≤ tan(π/8)`.
/// Signs as `f32::atan2` (`−0.0` counts as negative); NaN in, NaN out; at the origin the same as
/// `f32::atan2`.
#[inline]
pub fn atan2(y: Real, x: Real) -> Real {
    use std::f32::consts::{FRAC_PI_2, FRAC_PI_4, PI};
    let (ax, ay) = (x.abs(), y.abs());
    let (num, den) = if ay > ax { (ax, ay) } else { (ay, ax) };
    if den == 0.0 {
        return y.atan2(x);
    }
    let t = num / den;
    let (t, base) = if t > 0.414_213_57 {
        ((t - 1.0) / (t + 1.0), FRAC_PI_4)
    } else {
        (t, 0.0)
    };
    let z = t * t;
    let poly =
        (((8.053_744_5e-2 * z - 1.387_768_6e-1) * z + 1.997_771_1e-1) * z - 3.333_295e-1) * z;
    let mut a = base + (poly * t + t);
    if ay > ax {
        a = FRAC_PI_2 - a;
    }
    if x.is_sign_negative() {
        a = PI - a;
    }
    if y.is_sign_negative() {
        -a
    } else {
        a
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    /// The inlined `atan2` against the exact (f64) angle of the same inputs, all round the
    /// circle and at several radii, and its special cases against `f32::atan2`.
    #[test]
    fn atan2_is_within_a_third_of_a_microradian() {
        let mut worst: f64 = 0.0;
        for k in 0..200_000 {
            let phi = -3.2 + 6.4 * k as f64 / 200_000.0;
            for r in [1.0e-6, 0.3, 1.0, 7.0e3] {
                let (y, x) = ((r * phi.sin()) as Real, (r * phi.cos()) as Real);
                let exact = (y as f64).atan2(x as f64);
                worst = worst.max((atan2(y, x) as f64 - exact).abs());
            }
        }
        assert!(worst < 3.0e-7, "largest error {worst} rad");
        for (y, x) in [
            (0.0, 0.0),
            (-0.0, 0.0),
            (0.0, -1.0),
            (-0.0, -1.0),
            (1.0, 0.0),
            (-1.0, -0.0),
            (2.0, 2.0),
        ] {
            assert_eq!(atan2(y, x), y.atan2(x), "atan2({y}, {x})");
        }
        assert!(atan2(Real::NAN, 1.0).is_nan() && atan2(1.0, Real::NAN).is_nan());
    }
}
