//! Painted per-vertex maps: attachment weights and compliance scales, the brushes that paint
//! them, and how they act on the simulation.
//!
//! # Maps
//!
//! Each garment may carry [`GarmentMaps`]: one value per **render-mesh** vertex in each of four
//! maps ([`MapKind`]): the attachment weight `w` (0–1), the stretch compliance scale `s`, the
//! bend compliance scale `β` and the mass scale `μ` (all dimensionless, 1 unpainted). The
//! artist paints on the render mesh; [`SimMaps::transfer`] carries the maps to the simulation
//! mesh every time the garment is loaded or its proxy rebuilt, so a proxy rebuild keeps them.
//!
//! # From weight to compliance
//!
//! ```text
//! w ≤ 0              no attachment
//! w ≥ w_hard         hard pin: inverse mass 0, moved to its target (body or world, as the
//!                    garment's pin_target says)
//! 0 < w < w_hard     soft attachment to the same target, compliance
//!                    α(w) = α₁ · (α₀ / α₁)^(1 − w)        (m/N)
//! ```
//!
//! `w_hard` is [`GarmentMaps::pin_threshold`] (default 0.99), `α₁` the compliance as the
//! weight approaches 1 ([`GarmentMaps::soft_compliance_m_per_n`], default 1e-4 m/N) and `α₀`
//! as it approaches 0 ([`GarmentMaps::free_compliance_m_per_n`], default 1 m/N). The
//! interpolation is geometric: with the defaults each 0.25 of weight is a factor 10 of
//! stiffness, and weight 0.5 gives 1e-2 m/N (a 1 N pull moves the vertex 1 cm).
//!
//! # Compliance scales
//!
//! After [`crate::garment::material::build_cloth`], [`SimMaps::scale_constraints`] multiplies each
//! constraint's compliance by the mean of its vertices' scale: stretch edges and shear
//! triangles by `s`, bending hinges by `β`; masses by `μ`. So `s = 10` is a region ten times
//! as stretchy, `s = 0` an inextensible one.
//!
//! # Brushes
//!
//! A dab of a [`Brush`] of radius `r` (m) at centre `c` touches the vertices at straight
//! distance `d = |x − c| < r` with the factor `f = strength · falloff(d / r)`:
//!
//! ```text
//! smooth     falloff(t) = 1 − 3t² + 2t³
//! linear     falloff(t) = 1 − t
//! constant   falloff(t) = 1
//! add        v ← v + f·value          subtract   v ← v − f·value
//! replace    v ← v + f·(value − v)    smooth     v ← v + f·(v̄ − v)
//! ```
//!
//! `v̄` is the mean over the vertex's mesh neighbours, taken before the dab (all vertices of a
//! dab are updated from the same old values), computed as `v + Σ(v_j − v)/k` so a constant map
//! stays bit for bit constant. Results are clamped to the map's range. Vertices at one position
//! (UV seam duplicates) are one point: they share neighbours, so smoothing and flood fill cross
//! seams. Flood fill applies the mode at full strength, without falloff, to the connected
//! component of the seed vertex. X-mirror also applies each vertex's factor to the vertex
//! nearest its mirror image `(−x, y, z)` ([`PaintMesh::mirror_of`]).
//!
//! A [`Stroke`] collects dabs and fills and ends as a [`MapEdit`]: the changed vertices with
//! their values before and after, which [`History`] undoes and redoes bit for bit.

mod brush;
mod maps;
mod to_sim;

pub use brush::{
    Brush, BrushError, BrushMode, Falloff, History, Hit, MapEdit, PaintMesh, Stroke,
    PAINT_WELD_TOLERANCE_M,
};
pub use maps::{
    attachment_compliance_m_per_n, decode_map, encode_map, encode_text, Attach, GarmentMaps,
    MapError, MapKind, VertexMaps, DEFAULT_FREE_COMPLIANCE_M_PER_N, DEFAULT_PIN_THRESHOLD,
    DEFAULT_SOFT_COMPLIANCE_M_PER_N, INLINE_LIMIT_BYTES, MAX_COMPLIANCE_SCALE, MAX_MASS_SCALE,
    MIN_MASS_SCALE, SIDECAR_EXTENSION, SIDECAR_MAGIC, SIDECAR_VERSION,
};
pub use to_sim::{RenderToSim, SimMaps};

/// Default tolerance of the X-mirror table (m): a vertex's mirror partner must lie this close
/// to its mirror image.
pub const DEFAULT_MIRROR_TOLERANCE_M: crate::math::Real = 0.01;

#[cfg(test)]
mod tests;
