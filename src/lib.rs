//! bayesc: a probabilistic programming language.
//!
//! The pipeline, one module per layer (dependencies point one way, STYLE.md §2):
//! `syntax` (text → AST) → `semantics` (checks, warnings) → `graph` (log-joint on the
//! unconstrained scale, with gradients) → `inference` (QBVI, QNVB, NUTS/HMC, Metropolis-Hastings)
//! → `diagnostics` (R-hat, ESS, PSIS) → `output` (summaries, draws files). `data` binds CSV/JSON
//! files to the `data` block. `cli` and `repl` are the only modules that print or exit.

pub mod cli;
pub mod data;
pub mod diagnostics;
pub mod distributions;
pub mod evaluate;
pub mod fit;
pub mod graph;
pub mod inference;
pub mod output;
pub mod pipeline;
pub mod predict;
pub mod repl;
pub mod semantics;
pub mod syntax;
pub mod words;
