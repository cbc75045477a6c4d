//! Inference algorithms. They see a model only through [`density::LogDensity`].

pub mod adapt;
pub mod chain;
pub mod chain_end;
pub mod density;
pub mod draws;
pub mod flat;
pub mod hessian;
pub mod hmc;
pub mod init;
pub mod interrupt;
pub mod laplace;
pub mod mcmc;
pub mod mh;
pub mod minibatch;
pub mod newton;
pub mod optimize;
pub mod pathfinder;
pub mod qbvi;
pub mod qnvb;
mod quasi_newton;
pub mod rng;
pub mod sandwich;
pub mod vi;

pub use density::{DensityError, LogDensity, MinibatchDensity};
pub use draws::Draws;
