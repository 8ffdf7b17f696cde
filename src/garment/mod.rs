//! The garment: its fabric in real units and the constraints built from it ([`material`]), the
//! simulation proxy ([`proxy`]), the render mesh bound to the proxy ([`binding`]) and the fit of a
//! garment to a body ([`fit`]).
//!
//! May import: [`crate::math`], [`crate::mesh`], [`crate::constraints`], [`crate::collide`]
//! (the body collider, for binding to the body's surface and fitting).

pub mod binding;
pub mod fit;
pub mod material;
pub mod pattern;
pub mod place;
pub mod proxy;
