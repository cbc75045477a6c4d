//! End-to-end tests of `inference::mcmc::sample` on closed-form targets (`specs/nuts.md` §8,
//! `specs/mh.md` §8). Run in release: `cargo test --release --test mcmc_samplers`.
#![allow(clippy::needless_range_loop)] // matrix code reads best with explicit indices

mod mh;
mod models;
mod nuts;
mod reproducibility;
mod support;
