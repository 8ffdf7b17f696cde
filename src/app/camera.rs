//! The viewport camera: an orbit camera around a target point, Y up, in metres.
//!
//! Pure maths (no GL), so that picking and the drawing agree and both are testable.

use parry3d::glamx::{Mat4, Vec4};

use crate::math::{Real, Vec3};

/// An orbit camera: it looks at `target_m` from `distance_m` away, turned by `yaw_rad` about
/// the vertical axis and raised by `pitch_rad`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OrbitCamera {
    /// The point looked at (m).
    pub target_m: Vec3,
    /// Turn about +Y (rad); 0 looks along −Z from +Z.
    pub yaw_rad: Real,
    /// Elevation above the horizontal (rad), within ±89°.
    pub pitch_rad: Real,
    /// Distance from the target (m).
    pub distance_m: Real,
    /// Vertical field of view (rad).
    pub fov_y_rad: Real,
}

impl Default for OrbitCamera {
    fn default() -> Self {
        Self {
            target_m: Vec3::new(0.0, 1.0, 0.0),
            yaw_rad: 0.5,
            pitch_rad: 0.25,
            distance_m: 3.0,
            fov_y_rad: 45f32.to_radians(),
        }
    }
}

/// Nearest clip distance (m).
pub const NEAR_M: Real = 0.01;
/// Farthest clip distance (m).
pub const FAR_M: Real = 200.0;

impl OrbitCamera {
    /// The eye position (m).
    pub fn eye(&self) -> Vec3 {
        let (sy, cy) = self.yaw_rad.sin_cos();
        let (sp, cp) = self.pitch_rad.sin_cos();
        self.target_m + self.distance_m * Vec3::new(cp * sy, sp, cp * cy)
    }

    /// Turns the camera by a mouse drag of `dx`, `dy` points.
    pub fn orbit(&mut self, dx: Real, dy: Real) {
        self.yaw_rad -= dx * 0.008;
        let limit = 89f32.to_radians();
        self.pitch_rad = (self.pitch_rad + dy * 0.008).clamp(-limit, limit);
    }

    /// Slides the target in the view plane by a drag of `dx`, `dy` points in a viewport
    /// `height` points tall, so that the point under the mouse follows it.
    pub fn pan(&mut self, dx: Real, dy: Real, height: Real) {
        let per_point = 2.0 * self.distance_m * (0.5 * self.fov_y_rad).tan() / height.max(1.0);
        let forward = (self.target_m - self.eye()).normalize_or_zero();
        let right = forward.cross(Vec3::Y).normalize_or_zero();
        let up = right.cross(forward);
        self.target_m += (-dx * right + dy * up) * per_point;
    }

    /// Moves toward the target by a scroll of `delta` points (positive: closer).
    pub fn zoom(&mut self, delta: Real) {
        self.distance_m = (self.distance_m * (-delta * 0.002).exp()).clamp(0.05, 100.0);
    }

    /// Looks at the box `min`–`max` (m) so that it fills the view.
    pub fn frame(&mut self, min: Vec3, max: Vec3) {
        if !(min.is_finite() && max.is_finite()) || min.cmpgt(max).any() {
            return;
        }
        self.target_m = 0.5 * (min + max);
        let radius = (0.5 * (max - min).length()).max(0.05);
        self.distance_m = (radius / (0.5 * self.fov_y_rad).sin() * 1.1).clamp(0.1, 100.0);
    }

    /// The view matrix (world to camera).
    pub fn view(&self) -> Mat4 {
        // Right-handed look-at: the camera looks down its −Z axis.
        let eye = self.eye();
        let f = (self.target_m - eye).normalize_or_zero();
        let s = f.cross(Vec3::Y).normalize_or_zero();
        let u = s.cross(f);
        Mat4::from_cols(
            Vec4::new(s.x, u.x, -f.x, 0.0),
            Vec4::new(s.y, u.y, -f.y, 0.0),
            Vec4::new(s.z, u.z, -f.z, 0.0),
            Vec4::new(-s.dot(eye), -u.dot(eye), f.dot(eye), 1.0),
        )
    }

    /// The projection matrix for a viewport of `aspect` = width / height (OpenGL clip space).
    pub fn projection(&self, aspect: Real) -> Mat4 {
        // OpenGL's perspective matrix (depth to [−1, 1]).
        let f = 1.0 / (0.5 * self.fov_y_rad).tan();
        let (n, far) = (NEAR_M, FAR_M);
        Mat4::from_cols(
            Vec4::new(f / aspect.max(1e-3), 0.0, 0.0, 0.0),
            Vec4::new(0.0, f, 0.0, 0.0),
            Vec4::new(0.0, 0.0, (far + n) / (n - far), -1.0),
            Vec4::new(0.0, 0.0, 2.0 * far * n / (n - far), 0.0),
        )
    }

    /// Where the world point `p` (m) appears in a viewport of `size` points (origin top-left),
    /// or `None` behind the camera.
    pub fn project(&self, p: Vec3, size: [Real; 2]) -> Option<[Real; 2]> {
        let clip = self.projection(size[0] / size[1].max(1.0)) * self.view() * Vec4::from((p, 1.0));
        if clip.w <= NEAR_M {
            return None;
        }
        let ndc = clip / clip.w;
        Some([(ndc.x + 1.0) * 0.5 * size[0], (1.0 - ndc.y) * 0.5 * size[1]])
    }

    /// The ray through the viewport point `at` (points, origin top-left): origin (m) and unit
    /// direction.
    pub fn ray(&self, at: [Real; 2], size: [Real; 2]) -> (Vec3, Vec3) {
        let aspect = size[0] / size[1].max(1.0);
        let ndc_x = 2.0 * at[0] / size[0].max(1.0) - 1.0;
        let ndc_y = 1.0 - 2.0 * at[1] / size[1].max(1.0);
        let inverse = (self.projection(aspect) * self.view()).inverse();
        let unproject = |z: Real| {
            let h = inverse * Vec4::new(ndc_x, ndc_y, z, 1.0);
            h.truncate() / h.w
        };
        let near = unproject(-1.0);
        let far = unproject(1.0);
        (near, (far - near).normalize_or_zero())
    }
}

/// The index of the point of `points` (m) drawn nearest to `at` (viewport points), if one is
/// within `radius` points.
pub fn pick_nearest(
    camera: &OrbitCamera,
    points: &[Vec3],
    at: [Real; 2],
    size: [Real; 2],
    radius: Real,
) -> Option<usize> {
    let mut best: Option<(usize, Real)> = None;
    for (i, p) in points.iter().enumerate() {
        if let Some(s) = camera.project(*p, size) {
            let d2 = (s[0] - at[0]).powi(2) + (s[1] - at[1]).powi(2);
            if d2 <= radius * radius && best.is_none_or(|(_, b)| d2 < b) {
                best = Some((i, d2));
            }
        }
    }
    best.map(|(i, _)| i)
}

/// The point of the plane through `anchor` facing the camera that lies under the viewport
/// point `at`: where a dragged vertex goes.
pub fn drag_target(camera: &OrbitCamera, anchor: Vec3, at: [Real; 2], size: [Real; 2]) -> Vec3 {
    let (origin, dir) = camera.ray(at, size);
    let normal = (camera.eye() - camera.target_m).normalize_or_zero();
    let denom = dir.dot(normal);
    if denom.abs() < 1e-6 {
        return anchor;
    }
    let t = (anchor - origin).dot(normal) / denom;
    origin + t * dir
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn projecting_the_target_lands_in_the_middle() {
        let c = OrbitCamera::default();
        let s = c.project(c.target_m, [800.0, 600.0]).unwrap();
        assert!(
            (s[0] - 400.0).abs() < 1e-3 && (s[1] - 300.0).abs() < 1e-3,
            "{s:?}"
        );
    }

    #[test]
    fn ray_through_a_projected_point_passes_through_it() {
        let c = OrbitCamera::default();
        let p = Vec3::new(0.3, 0.8, -0.2);
        let size = [800.0, 600.0];
        let s = c.project(p, size).unwrap();
        let (o, d) = c.ray(s, size);
        let closest = o + d * (p - o).dot(d);
        assert!((closest - p).length() < 1e-4, "{closest} vs {p}");
        // The drag target of that point, on the plane through it, is the point itself.
        assert!((drag_target(&c, p, s, size) - p).length() < 1e-4);
    }

    #[test]
    fn picking_takes_the_nearest_point_within_the_radius() {
        let c = OrbitCamera::default();
        let size = [800.0, 600.0];
        let points = [c.target_m, c.target_m + Vec3::new(0.5, 0.0, 0.0)];
        assert_eq!(
            pick_nearest(&c, &points, [401.0, 300.0], size, 10.0),
            Some(0)
        );
        assert_eq!(pick_nearest(&c, &points, [10.0, 10.0], size, 10.0), None);
    }

    #[test]
    fn framing_a_box_keeps_it_in_view_and_orbit_clamps_pitch() {
        let mut c = OrbitCamera::default();
        let (min, max) = (Vec3::new(-1.0, 0.0, -1.0), Vec3::new(1.0, 2.0, 1.0));
        c.frame(min, max);
        let size = [800.0, 600.0];
        for corner in [min, max, Vec3::new(-1.0, 2.0, 1.0)] {
            let s = c.project(corner, size).unwrap();
            assert!(s[1] >= 0.0 && s[1] <= 600.0, "{corner} at {s:?}");
        }
        c.orbit(0.0, 1.0e6);
        assert!(c.pitch_rad <= 89f32.to_radians() + 1e-6);
        c.zoom(1.0e6);
        assert!(c.distance_m >= 0.05);
    }
}
