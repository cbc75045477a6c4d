//! Output of fits: summary tables, Stan CSV files and plain draws CSV files, written atomically.
//!
//! Every file writer here goes through [`write_atomic`]: the content is written to a temporary
//! file `<name>.tmp-<pid>` in the target's directory and renamed over the target only after it
//! was written and synced in full, so a file is written whole or not at all.

pub mod fit_files;
pub mod plot;
pub mod progress;
pub mod report;
pub mod stan_csv;
pub mod stan_stream;
pub mod summary;
mod vi_header;

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

pub use stan_csv::{StanCsv, StanCsvError, StanCsvLayout, read_stan_csv, write_stan_csv};
pub use summary::{SummaryRow, format_table, summarize};

/// Writes a file atomically: `write` fills a buffered temporary file `<path>.tmp-<pid>` in the
/// same directory, which is flushed, synced and renamed to `path`. On any error the temporary
/// file is removed and `path` is left as it was (absent, or with its old content).
///
/// When `path` exists and is not a regular file (a device such as `/dev/stdout`, a pipe), it is
/// written in place, since renaming over it would replace the device; write errors (e.g. `ENOSPC`
/// from `/dev/full`) are returned as for files.
///
/// Errors: whatever creating, writing, syncing or renaming returns (e.g. `NotFound` when the
/// directory does not exist, `IsADirectory`), or the error returned by `write`.
pub fn write_atomic<F>(path: &Path, write: F) -> io::Result<()>
where
    F: FnOnce(&mut dyn Write) -> io::Result<()>,
{
    if let Ok(meta) = fs::metadata(path) {
        if meta.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::IsADirectory,
                format!("{} is a directory", path.display()),
            ));
        }
        if !meta.is_file() {
            let mut w = BufWriter::new(fs::OpenOptions::new().write(true).open(path)?);
            write(&mut w)?;
            return w.flush();
        }
    }
    let tmp = temp_path(path)?;
    let result = (|| {
        let file = File::create(&tmp)?;
        let mut w = BufWriter::new(file);
        write(&mut w)?;
        let file = w.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        // the temporary file may or may not exist; nothing else to clean up
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// `<dir>/<file name>.tmp-<pid>` next to `path`.
fn temp_path(path: &Path) -> io::Result<PathBuf> {
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("output path {} has no file name", path.display()),
        )
    })?;
    let mut tmp_name = name.to_os_string();
    tmp_name.push(format!(".tmp-{}", std::process::id()));
    Ok(path.with_file_name(tmp_name))
}

/// Formats an f64 so that parsing the text gives back the same value: the shortest round-trip
/// decimal (`{}`) for 1e-5 ≤ |x| < 1e15, zero, and integral values below about 2⁶³ (plain digits,
/// every digit exact for the stored f64), otherwise the shortest round-trip scientific
/// form (`{:e}`, e.g. `1.5e-7`); non-finite values as `NaN`, `inf`, `-inf` (the spellings the
/// Stan CSV format allows).
pub fn format_f64_roundtrip(x: f64) -> String {
    let a = x.abs();
    if x.is_nan() {
        "NaN".to_string()
    } else if (1e15..9.2e18).contains(&a) && x.fract() == 0.0 {
        // integral values below 2⁶³ (counts from generated quantities) in their exact digits:
        // `1152921504606847232`, not `1.152921504606847e18` (nor Display's `…847200`)
        format!("{}", x as i64)
    } else if x.is_infinite() || a == 0.0 || (1e-5..1e15).contains(&a) {
        format!("{x}")
    } else {
        format!("{x:e}")
    }
}

/// Formats an f64 with `sig_figs` significant digits as C++'s `std::setprecision(n)` with the
/// default float format (`%g`), which CmdStan's `sig_figs` uses: fixed notation when the decimal
/// exponent X satisfies −4 ≤ X < n, scientific (`1.2346e-07`, two exponent digits at least)
/// otherwise, trailing zeros removed. `None` gives [`format_f64_roundtrip`]. Non-finite values
/// and zero are written as there. `sig_figs` is clamped to 1..=18.
pub fn format_f64_sig(x: f64, sig_figs: Option<usize>) -> String {
    let Some(n) = sig_figs else {
        return format_f64_roundtrip(x);
    };
    if !x.is_finite() || x == 0.0 {
        return format_f64_roundtrip(x);
    }
    let n = n.clamp(1, 18);
    // the exponent after rounding to n digits (9.9996 at 4 digits is 1.000e1)
    let sci = format!("{:.*e}", n - 1, x);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let strip = |t: &str| -> String {
        if t.contains('.') {
            t.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            t.to_string()
        }
    };
    if exp < -4 || exp >= n as i32 {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", strip(mantissa), exp.abs())
    } else {
        let decimals = (n as i32 - 1 - exp).max(0) as usize;
        strip(&format!("{x:.decimals$}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The strings C++ `std::cout << std::setprecision(n) << x` prints (values checked by
    /// hand against the `%g` rules of the C standard, §7.21.6.1).
    #[test]
    fn significant_figures_follow_printf_g() {
        let cases: [(f64, usize, &str); 12] = [
            (1.23456789, 6, "1.23457"),
            (1.23456789, 3, "1.23"),
            (-0.000123456789, 6, "-0.000123457"),
            (1.23456789e-7, 5, "1.2346e-07"),
            (123456789.0, 6, "1.23457e+08"),
            (123456.0, 6, "123456"),
            (2.5, 6, "2.5"),
            (9.9996, 4, "10"),
            (100.0, 2, "1e+02"),
            (0.1, 18, "0.100000000000000006"),
            (-7.0, 1, "-7"),
            (1e-5, 3, "1e-05"),
        ];
        for (x, n, want) in cases {
            assert_eq!(format_f64_sig(x, Some(n)), want, "{x} at {n}");
        }
        assert_eq!(format_f64_sig(0.1, None), "0.1");
        assert_eq!(format_f64_sig(f64::NAN, Some(3)), "NaN");
    }

    #[cfg(unix)]
    #[test]
    fn devices_are_written_in_place_and_their_errors_returned() {
        // /dev/full reports ENOSPC on write: the error must reach the caller, and the device
        // must not be replaced by a regular file (as a rename would do when run as root).
        let full = Path::new("/dev/full");
        if fs::metadata(full)
            .map(|m| m.file_type().is_file())
            .unwrap_or(true)
        {
            return; // no such device here
        }
        let e = write_atomic(full, |w| w.write_all(&[b'x'; 100_000])).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOSPC), "{e}");
        assert!(!fs::metadata(full).unwrap().file_type().is_file());
        write_atomic(Path::new("/dev/null"), |w| w.write_all(b"ok")).unwrap();
        let dir = std::env::temp_dir();
        let e = write_atomic(&dir, |w| w.write_all(b"x")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::IsADirectory);
    }

    #[test]
    fn roundtrip_formatting() {
        for &x in &[
            0.0,
            -0.0,
            0.1,
            1.0 / 3.0,
            -2.5e-7,
            1e300,
            123456.789,
            f64::MIN_POSITIVE,
        ] {
            let s = format_f64_roundtrip(x);
            assert_eq!(s.parse::<f64>().unwrap().to_bits(), x.to_bits(), "{s}");
        }
        assert_eq!(format_f64_roundtrip(1.5e-7), "1.5e-7");
        assert_eq!(format_f64_roundtrip(f64::NAN), "NaN");
        assert_eq!(format_f64_roundtrip(f64::NEG_INFINITY), "-inf");
    }

    #[test]
    fn atomic_write_replaces_or_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.txt");
        write_atomic(&p, |w| w.write_all(b"hello")).unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "hello");
        // a failing writer leaves the old content and no temporary file
        let err = write_atomic(&p, |w| {
            w.write_all(b"partial")?;
            Err(io::Error::other("boom"))
        });
        assert!(err.is_err());
        assert_eq!(fs::read_to_string(&p).unwrap(), "hello");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
        // a missing directory is an error and creates nothing
        let missing = dir.path().join("no_such_dir").join("x.csv");
        let e = write_atomic(&missing, |w| w.write_all(b"x")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert!(!missing.exists());
        assert!(!dir.path().join("no_such_dir").exists());
    }
}
