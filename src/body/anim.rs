//! Animation channels and their interpolation (the formulas are in the [module docs](super)).
//!
//! The functions here are pure: a channel's keys and a time in, a value out. Loading and
//! validating the keys is `load`'s job; a [`Channel`] is trusted to hold
//! `times.len() × elements_per_key × width` values.

use crate::body::{Playback, Pose, Quat};
use crate::math::Vec3;

/// How a channel's value is found between its keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Interpolation {
    /// The value of the key at or before the time.
    Step,
    /// Linear interpolation; slerp for rotations.
    Linear,
    /// Cubic Hermite spline with per-key in- and out-tangents.
    CubicSpline,
}

/// What a channel animates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Property {
    /// The node's translation (3 values, m).
    Translation,
    /// The node's rotation (4 values, a quaternion `x y z w`).
    Rotation,
    /// The node's scale (3 values).
    Scale,
    /// The morph weights of the node's mesh (one value per target).
    Weights,
}

/// One animated property of one node.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Channel {
    /// The animated node.
    pub node: usize,
    /// The animated property.
    pub property: Property,
    /// How to interpolate.
    pub interpolation: Interpolation,
    /// Key times, finite and strictly increasing (s).
    pub times: Vec<f64>,
    /// Key values, `width` per element; one element per key, or three for CUBICSPLINE
    /// (in-tangent, value, out-tangent).
    pub values: Vec<f32>,
    /// Values per element: 3, 4, or the number of morph targets.
    pub width: usize,
}

/// The channels of one animation.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Clip {
    /// The channels, applied in order (a later channel on the same property wins).
    pub channels: Vec<Channel>,
}

/// Largest number of morph targets sampled without allocating (more are still sampled).
const INLINE_WIDTH: usize = 16;

impl Clip {
    /// Writes every channel's value at `t` (s) into `pose`; other properties are left alone.
    pub fn apply(&self, t: f64, pose: &mut Pose) {
        let mut buf = [0.0f32; INLINE_WIDTH];
        let mut heap = Vec::new();
        for ch in &self.channels {
            let out: &mut [f32] = if ch.width <= INLINE_WIDTH {
                &mut buf[..ch.width]
            } else {
                heap.resize(ch.width, 0.0);
                &mut heap
            };
            ch.sample(t, out);
            let n = ch.node;
            match ch.property {
                Property::Translation => {
                    if let Some(v) = pose.translation.get_mut(n) {
                        *v = Vec3::new(out[0], out[1], out[2]);
                    }
                }
                Property::Scale => {
                    if let Some(v) = pose.scale.get_mut(n) {
                        *v = Vec3::new(out[0], out[1], out[2]);
                    }
                }
                Property::Rotation => {
                    if let Some(q) = pose.rotation.get_mut(n) {
                        *q = normalize_quat(Quat::from_xyzw(out[0], out[1], out[2], out[3]));
                    }
                }
                Property::Weights => {
                    if let Some(w) = pose.weights.get_mut(n) {
                        let k = w.len().min(out.len());
                        w[..k].copy_from_slice(&out[..k]);
                    }
                }
            }
        }
    }
}

impl Channel {
    /// The `which`-th element of key `key` (for CUBICSPLINE: 0 in-tangent, 1 value,
    /// 2 out-tangent; otherwise only 0).
    fn element(&self, key: usize, which: usize) -> &[f32] {
        let per_key = match self.interpolation {
            Interpolation::CubicSpline => 3,
            _ => 1,
        };
        let start = (key * per_key + which) * self.width;
        &self.values[start..start + self.width]
    }

    /// The value of key `key`.
    fn value(&self, key: usize) -> &[f32] {
        match self.interpolation {
            Interpolation::CubicSpline => self.element(key, 1),
            _ => self.element(key, 0),
        }
    }

    /// The channel's value at `t` (s) into `out` (`width` values). Rotations come out
    /// unnormalised from CUBICSPLINE; [`Clip::apply`] normalises them.
    pub fn sample(&self, t: f64, out: &mut [f32]) {
        let (k, u, dt) = locate(&self.times, t);
        if u == 0.0 || self.interpolation == Interpolation::Step {
            out.copy_from_slice(self.value(k));
            return;
        }
        match self.interpolation {
            Interpolation::Step => {}
            Interpolation::Linear if self.property == Property::Rotation => {
                let q = |v: &[f32]| Quat::from_xyzw(v[0], v[1], v[2], v[3]);
                let r = slerp(q(self.value(k)), q(self.value(k + 1)), u as f32);
                out.copy_from_slice(&r.to_array());
            }
            Interpolation::Linear => {
                let u = u as f32;
                for ((o, a), b) in out.iter_mut().zip(self.value(k)).zip(self.value(k + 1)) {
                    *o = a + (b - a) * u;
                }
            }
            Interpolation::CubicSpline => {
                let (v0, b0) = (self.element(k, 1), self.element(k, 2));
                let (a1, v1) = (self.element(k + 1, 0), self.element(k + 1, 1));
                for (i, o) in out.iter_mut().enumerate() {
                    *o = hermite(v0[i], b0[i], v1[i], a1[i], dt, u);
                }
            }
        }
    }
}

/// Where `t` (s) falls among `times` (strictly increasing, not empty): `(k, u, Δ)` with
/// `t = t_k + u · Δ`, `Δ = t_{k+1} − t_k` and `0 ≤ u < 1`. Before the first key (or for a NaN
/// time) it is `(0, 0, 0)`, at or after the last `(n − 1, 0, 0)`.
pub(crate) fn locate(times: &[f64], t: f64) -> (usize, f64, f64) {
    let (Some(&first), Some(&last)) = (times.first(), times.last()) else {
        return (0, 0.0, 0.0);
    };
    // NaN goes here too.
    if t.is_nan() || t <= first {
        return (0, 0.0, 0.0);
    }
    if t >= last {
        return (times.len() - 1, 0.0, 0.0);
    }
    // first < t < last, so 1 ≤ partition_point ≤ n − 1.
    let k = times.partition_point(|&x| x <= t) - 1;
    let dt = times[k + 1] - times[k];
    (k, (t - times[k]) / dt, dt)
}

/// The cubic Hermite spline of glTF's CUBICSPLINE between values `v0` and `v1`, with `b0` the
/// out-tangent of the first key, `a1` the in-tangent of the second, `dt` the interval between
/// them (s) and `u ∈ [0, 1]` the fraction of it.
pub(crate) fn hermite(v0: f32, b0: f32, v1: f32, a1: f32, dt: f64, u: f64) -> f32 {
    let (u2, u3) = (u * u, u * u * u);
    let h00 = 2.0 * u3 - 3.0 * u2 + 1.0;
    let h10 = u3 - 2.0 * u2 + u;
    let h01 = -2.0 * u3 + 3.0 * u2;
    let h11 = u3 - u2;
    (h00 * v0 as f64 + h10 * dt * b0 as f64 + h01 * v1 as f64 + h11 * dt * a1 as f64) as f32
}

/// Spherical linear interpolation along the shorter arc (`b` is negated when `a · b < 0`);
/// the result is normalised.
pub(crate) fn slerp(a: Quat, b: Quat, u: f32) -> Quat {
    normalize_quat(a.slerp(b, u))
}

/// `q / |q|`, or the identity for a zero or non-finite quaternion.
pub(crate) fn normalize_quat(q: Quat) -> Quat {
    let len = q.length();
    if len.is_finite() && len > 1e-12 {
        q / len
    } else {
        Quat::IDENTITY
    }
}

/// The time at which to evaluate an animation running from `start` to `end` (s) at `t` (s).
///
/// `Loop` wraps `t` into `[start, end)` (times before `start` wrap too); `Clamp` clamps it to
/// `[start, end]`. A NaN time, or an infinite one with `Loop`, gives `start`.
pub(crate) fn wrap_time(t: f64, start: f64, end: f64, playback: Playback) -> f64 {
    if t.is_nan() {
        return start;
    }
    let len = end - start;
    match playback {
        Playback::Clamp => t.max(start).min(end.max(start)),
        Playback::Loop => {
            if len.is_nan() || len <= 0.0 || !t.is_finite() {
                return start;
            }
            let r = (t - start).rem_euclid(len);
            // rem_euclid can round up to `len` for a tiny negative offset.
            if r >= len {
                start
            } else {
                start + r
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_abs_diff_eq;
    use std::f32::consts::{FRAC_PI_2, FRAC_PI_4};

    fn channel(
        interpolation: Interpolation,
        property: Property,
        times: &[f64],
        values: &[f32],
        width: usize,
    ) -> Channel {
        Channel {
            node: 0,
            property,
            interpolation,
            times: times.to_vec(),
            values: values.to_vec(),
            width,
        }
    }

    fn at(ch: &Channel, t: f64) -> Vec<f32> {
        let mut out = vec![0.0; ch.width];
        ch.sample(t, &mut out);
        out
    }

    #[test]
    fn step_holds_each_key_until_the_next() {
        let ch = channel(
            Interpolation::Step,
            Property::Weights,
            &[0.0, 1.0, 2.0],
            &[10.0, 20.0, 30.0],
            1,
        );
        assert_eq!(at(&ch, -1.0), [10.0]);
        assert_eq!(at(&ch, 0.0), [10.0]);
        assert_eq!(at(&ch, 0.999), [10.0]);
        assert_eq!(at(&ch, 1.0), [20.0]);
        assert_eq!(at(&ch, 1.5), [20.0]);
        assert_eq!(at(&ch, 2.0), [30.0]);
        assert_eq!(at(&ch, 9.0), [30.0]);
    }

    #[test]
    fn linear_interpolates_and_clamps_outside_the_keys() {
        let ch = channel(
            Interpolation::Linear,
            Property::Translation,
            &[1.0, 3.0],
            &[0.0, 0.0, 0.0, 4.0, -2.0, 8.0],
            3,
        );
        assert_eq!(at(&ch, 0.0), [0.0, 0.0, 0.0]);
        let mid = at(&ch, 1.5);
        assert_abs_diff_eq!(mid[0], 1.0, epsilon = 1e-6);
        assert_abs_diff_eq!(mid[1], -0.5, epsilon = 1e-6);
        assert_abs_diff_eq!(mid[2], 2.0, epsilon = 1e-6);
        assert_eq!(at(&ch, 3.0), [4.0, -2.0, 8.0]);
        assert_eq!(at(&ch, 7.0), [4.0, -2.0, 8.0]);
        assert_eq!(at(&ch, f64::NAN), [0.0, 0.0, 0.0]);
    }

    #[test]
    fn cubic_spline_matches_a_hand_computed_hermite_value() {
        // Keys at 0 s and 2 s: values 1 and 3, out-tangent of key 0 = 0.5/s, in-tangent of
        // key 1 = −1/s (the first key's in-tangent and the last's out-tangent are unused).
        let ch = channel(
            Interpolation::CubicSpline,
            Property::Weights,
            &[0.0, 2.0],
            &[9.0, 1.0, 0.5, -1.0, 3.0, 9.0],
            1,
        );
        // u = 0.25, Δ = 2:
        // h00 = 2/64 − 3/16 + 1 = 0.84375      h10 = 1/64 − 2/16 + 1/4 = 0.140625
        // h01 = −2/64 + 3/16 = 0.15625         h11 = 1/64 − 1/16 = −0.046875
        // v = 0.84375·1 + 0.140625·2·0.5 + 0.15625·3 + (−0.046875)·2·(−1) = 1.546875
        assert_abs_diff_eq!(at(&ch, 0.5)[0], 1.546875, epsilon = 1e-6);
        assert_abs_diff_eq!(
            hermite(1.0, 0.5, 3.0, -1.0, 2.0, 0.25),
            1.546875,
            epsilon = 1e-6
        );
        // The keys themselves are hit exactly, and the ends clamp.
        assert_eq!(at(&ch, 0.0), [1.0]);
        assert_eq!(at(&ch, 2.0), [3.0]);
        assert_eq!(at(&ch, -5.0), [1.0]);
        assert_eq!(at(&ch, 5.0), [3.0]);
    }

    #[test]
    fn cubic_spline_rotations_are_normalised_when_applied() {
        let q0 = Quat::IDENTITY.to_array();
        let q1 = Quat::from_rotation_y(FRAC_PI_2).to_array();
        let zero = [0.0; 4];
        let values: Vec<f32> = [zero, q0, zero, zero, q1, zero].concat();
        let ch = channel(
            Interpolation::CubicSpline,
            Property::Rotation,
            &[0.0, 1.0],
            &values,
            4,
        );
        let mut pose = Pose {
            translation: vec![Vec3::ZERO],
            rotation: vec![Quat::IDENTITY],
            scale: vec![Vec3::ONE],
            weights: vec![vec![]],
        };
        Clip { channels: vec![ch] }.apply(0.5, &mut pose);
        assert_abs_diff_eq!(pose.rotation[0].length(), 1.0, epsilon = 1e-6);
        // With zero tangents the curve is symmetric: halfway is a 45° turn about +Y.
        let (axis, angle) = pose.rotation[0].to_axis_angle();
        assert_abs_diff_eq!(angle, FRAC_PI_4, epsilon = 1e-5);
        assert_abs_diff_eq!(axis.y, 1.0, epsilon = 1e-5);
    }

    #[test]
    fn linear_rotation_slerps_to_the_midpoint() {
        let q1 = Quat::from_rotation_x(FRAC_PI_2);
        let values: Vec<f32> = [Quat::IDENTITY.to_array(), q1.to_array()].concat();
        let ch = channel(
            Interpolation::Linear,
            Property::Rotation,
            &[0.0, 1.0],
            &values,
            4,
        );
        let r = at(&ch, 0.5);
        let q = Quat::from_xyzw(r[0], r[1], r[2], r[3]);
        let (axis, angle) = q.to_axis_angle();
        assert_abs_diff_eq!(angle, FRAC_PI_4, epsilon = 1e-5);
        assert_abs_diff_eq!(axis.x, 1.0, epsilon = 1e-5);
        // A quarter of the way is a quarter of the angle (slerp, not nlerp).
        let r = at(&ch, 0.25);
        let (_, angle) = Quat::from_xyzw(r[0], r[1], r[2], r[3]).to_axis_angle();
        assert_abs_diff_eq!(angle, FRAC_PI_2 / 4.0, epsilon = 1e-5);
    }

    #[test]
    fn slerp_takes_the_shortest_path_when_signs_are_opposite() {
        // 10° and −(80°) about Z: the same rotations as 10° and 80°, stored with opposite
        // signs. The short way passes 45°; the long way would go through 225°.
        let a = Quat::from_rotation_z(10f32.to_radians());
        let b = -Quat::from_rotation_z(80f32.to_radians());
        assert!(a.dot(b) < 0.0);
        let mid = slerp(a, b, 0.5);
        let want = Quat::from_rotation_z(45f32.to_radians());
        assert_abs_diff_eq!(mid.dot(want).abs(), 1.0, epsilon = 1e-6);
        // The same through a channel.
        let values: Vec<f32> = [a.to_array(), b.to_array()].concat();
        let ch = channel(
            Interpolation::Linear,
            Property::Rotation,
            &[0.0, 1.0],
            &values,
            4,
        );
        let r = at(&ch, 0.5);
        assert_abs_diff_eq!(
            Quat::from_xyzw(r[0], r[1], r[2], r[3]).dot(want).abs(),
            1.0,
            epsilon = 1e-6
        );
    }

    #[test]
    fn loop_wraps_and_clamp_clamps() {
        let (s, e) = (1.0, 3.0);
        assert_abs_diff_eq!(wrap_time(2.5, s, e, Playback::Loop), 2.5);
        assert_abs_diff_eq!(wrap_time(3.0, s, e, Playback::Loop), 1.0);
        assert_abs_diff_eq!(wrap_time(3.5, s, e, Playback::Loop), 1.5, epsilon = 1e-12);
        assert_abs_diff_eq!(wrap_time(7.25, s, e, Playback::Loop), 1.25, epsilon = 1e-12);
        // Before the start, looping runs backwards through the cycle.
        assert_abs_diff_eq!(wrap_time(0.5, s, e, Playback::Loop), 2.5, epsilon = 1e-12);
        assert_abs_diff_eq!(wrap_time(-2.0, s, e, Playback::Loop), 2.0, epsilon = 1e-12);
        assert!(wrap_time(-1e-20, 0.0, 2.0, Playback::Loop) < 2.0);
        assert_eq!(wrap_time(0.5, s, e, Playback::Clamp), 1.0);
        assert_eq!(wrap_time(2.5, s, e, Playback::Clamp), 2.5);
        assert_eq!(wrap_time(9.0, s, e, Playback::Clamp), 3.0);
        assert_eq!(wrap_time(f64::NAN, s, e, Playback::Clamp), 1.0);
        assert_eq!(wrap_time(f64::INFINITY, s, e, Playback::Loop), 1.0);
        assert_eq!(wrap_time(f64::INFINITY, s, e, Playback::Clamp), 3.0);
        // A single-key animation has no length: every time is its start.
        assert_eq!(wrap_time(5.0, 2.0, 2.0, Playback::Loop), 2.0);
        assert_eq!(wrap_time(5.0, 2.0, 2.0, Playback::Clamp), 2.0);
    }

    #[test]
    fn locate_finds_the_interval() {
        let t = [0.0, 1.0, 3.0];
        assert_eq!(locate(&t, -1.0), (0, 0.0, 0.0));
        assert_eq!(locate(&t, 0.5), (0, 0.5, 1.0));
        assert_eq!(locate(&t, 1.0), (1, 0.0, 2.0));
        assert_eq!(locate(&t, 2.0), (1, 0.5, 2.0));
        assert_eq!(locate(&t, 3.0), (2, 0.0, 0.0));
        assert_eq!(locate(&[4.0], 5.0), (0, 0.0, 0.0));
    }
}
