//! The `bayesc` binary: everything happens in [`bayesc::cli::run`].

fn main() {
    std::process::exit(bayesc::cli::run());
}
