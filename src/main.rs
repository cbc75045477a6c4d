//! The `bayesc` binary: everything happens in [`bayesc::cli::run`].

fn main() {
    // Die quietly on a closed pipe (`bayesc fit … | head`) as command-line tools do, instead
    // of panicking in `println!`: restore the default SIGPIPE action that Rust's runtime masks.
    #[cfg(unix)]
    // SAFETY: setting a signal disposition to SIG_DFL at start-up, before any thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    std::process::exit(bayesc::cli::run());
}
