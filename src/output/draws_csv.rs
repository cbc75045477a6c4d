//! Plain draws CSV (header = quantity names, one row per draw), e.g. for variational fits'
//! `--output`; written atomically.

use std::io;
use std::path::Path;

use super::{format_f64_roundtrip, write_atomic};
use crate::inference::Draws;

/// Writes `draws` as CSV: a header row with the user-facing names (`beta[1]`; names containing
/// commas, such as `Sigma[2,1]`, are quoted as CSV requires) and one row per draw with
/// round-trip precision ([`super::format_f64_roundtrip`]). When there is more than one chain a
/// first column `chain` (1-based) is added and the chains follow one another.
///
/// Written whole or not at all ([`super::write_atomic`]). Errors: `InvalidInput` (nothing
/// written) if a chain's length is not a multiple of the number of names; any I/O error.
pub fn write_draws_csv(path: &Path, draws: &Draws) -> io::Result<()> {
    let k = draws.names.len();
    if k == 0 || draws.chains.iter().any(|c| c.len() % k != 0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "draws are not a whole number of rows of {k} columns (chain lengths {:?})",
                draws.chains.iter().map(Vec::len).collect::<Vec<_>>()
            ),
        ));
    }
    let with_chain = draws.chains.len() > 1;
    write_atomic(path, |w| {
        let mut cw = csv::Writer::from_writer(w);
        let mut header: Vec<&str> = Vec::with_capacity(k + 1);
        if with_chain {
            header.push("chain");
        }
        header.extend(draws.names.iter().map(String::as_str));
        cw.write_record(&header).map_err(io::Error::other)?;
        for (c, chain) in draws.chains.iter().enumerate() {
            for row in chain.chunks(k) {
                let mut rec: Vec<String> = Vec::with_capacity(k + 1);
                if with_chain {
                    rec.push((c + 1).to_string());
                }
                rec.extend(row.iter().map(|v| format_f64_roundtrip(*v)));
                cw.write_record(&rec).map_err(io::Error::other)?;
            }
        }
        cw.flush()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_header_and_rows() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("draws.csv");
        let d = Draws {
            names: vec!["mu".into(), "Sigma[2,1]".into()],
            chains: vec![vec![1.0, 0.5, -2.25, 1e-9]],
        };
        write_draws_csv(&p, &d).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(text, "mu,\"Sigma[2,1]\"\n1,0.5\n-2.25,1e-9\n");
        let two = Draws {
            names: vec!["mu".into()],
            chains: vec![vec![1.0], vec![2.0]],
        };
        write_draws_csv(&p, &two).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "chain,mu\n1,1\n2,2\n");
        // invalid shape and missing directory: errors, nothing created
        let bad = Draws {
            names: vec!["a".into(), "b".into()],
            chains: vec![vec![1.0]],
        };
        let q = dir.path().join("bad.csv");
        assert!(write_draws_csv(&q, &bad).is_err());
        assert!(!q.exists());
        let missing = dir.path().join("nope").join("d.csv");
        assert!(write_draws_csv(&missing, &d).is_err());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
