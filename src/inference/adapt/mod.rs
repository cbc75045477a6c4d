//! Warmup adaptation shared by the MCMC samplers: dual averaging of the step size, Welford
//! variance/covariance estimators, and Stan's windowed schedule (`specs/nuts.md` §5).

pub mod dual_averaging;
pub mod welford;
pub mod windows;

pub use dual_averaging::DualAveraging;
pub use welford::{WelfordCov, WelfordVar};
pub use windows::WindowSchedule;
