//! Inference algorithms. They see a model only through [`density::LogDensity`].

pub mod density;
pub mod draws;
pub mod init;
pub mod rng;

pub use density::{DensityError, LogDensity};
pub use draws::Draws;
