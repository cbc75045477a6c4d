//! Inference algorithms. They see a model only through [`density::LogDensity`].

pub mod adapt;
pub mod density;
pub mod draws;
pub mod hmc;
pub mod init;
pub mod mcmc;
pub mod mh;
pub mod rng;

pub use density::{DensityError, LogDensity};
pub use draws::Draws;
