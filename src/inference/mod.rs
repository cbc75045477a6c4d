//! Inference algorithms. They see a model only through [`density::LogDensity`].

pub mod density;

pub use density::{DensityError, LogDensity};
