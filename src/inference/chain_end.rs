//! Where the chains of an interrupted MCMC run were when the stop came ([`ChainEnd`]) and the
//! sentence that says so. Chains run in parallel on the rayon pool, at most one per thread
//! (one per core by default); on 2 cores a 4-chain run starts chains 3 and 4 only when chains
//! 1 and 2 are done, so a Ctrl-C in the first half keeps 2 chains and the user needs to be told
//! why the other 2 have no draws ([X]: fresh-user finding, session 18).

use super::mcmc::{ChainEnd, ChainOutput, McmcOutput};

/// A chain of a run stopped by Ctrl-C or SIGTERM during its warmup, whose warmup draws were
/// kept (`save_warmup`; [`McmcOutput::warmup_stopped`]): `bayesc fit --output` streams them to
/// the chain's file, which ends `# interrupted: 0 of M draws, K warmup draws (in warmup)`, and
/// the REPL, which does not stream, keeps them here so that `:save` writes the same file
/// ([X]: fresh-user finding, session 20: the REPL dropped them and `:save` wrote nothing).
#[derive(Clone, Debug, PartialEq)]
pub struct WarmupStopped {
    /// The chain's 0-based number among the requested chains.
    pub id: usize,
    /// Its output: `warmup_stats` and the timing (no post-warmup draws).
    pub chain: ChainOutput,
    /// Its kept warmup draws on the constrained scale, row-major (K rows × the fit's draw
    /// columns: parameters, transformed parameters, generated quantities).
    pub values: Vec<f64>,
}

impl ChainEnd {
    /// The end of `chain`: `stopped` is whether the stop flag ended it, `warmup` the warmup
    /// iterations requested (0 for fixed_param). A stopped chain that ran no iteration had not
    /// started; one without kept post-warmup draws was in warmup.
    pub fn of(chain: &ChainOutput, stopped: bool, warmup: usize) -> ChainEnd {
        if !stopped {
            ChainEnd::Finished
        } else if chain.iterations == 0 {
            ChainEnd::NotStarted
        } else if chain.stats.is_empty() {
            ChainEnd::Warmup(chain.iterations.min(warmup))
        } else {
            ChainEnd::Sampling(chain.stats.len())
        }
    }
}

/// 1-based chain numbers for a message: "chain 3", "chains 3 and 4", "chains 1, 3 and 4", with
/// runs of three or more as "5–8". `numbers` ascending and non-empty.
pub fn chain_numbers(numbers: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < numbers.len() {
        let mut j = i;
        while j + 1 < numbers.len() && numbers[j + 1] == numbers[j] + 1 {
            j += 1;
        }
        if j >= i + 2 {
            parts.push(format!("{}–{}", numbers[i], numbers[j]));
        } else {
            parts.extend(numbers[i..=j].iter().map(|n| n.to_string()));
        }
        i = j + 1;
    }
    let word = if numbers.len() == 1 {
        "chain"
    } else {
        "chains"
    };
    match parts.len() {
        0 => format!("no {word}"),
        1 => format!("{word} {}", parts[0]),
        n => format!("{word} {} and {}", parts[..n - 1].join(", "), parts[n - 1]),
    }
}

impl McmcOutput {
    /// The 0-based numbers of the requested chains that `chains` holds, in order: every chain
    /// for a run that finished, and for an interrupted one after `fit::trim_interrupted` those
    /// that had post-warmup draws (finished, or stopped while sampling), so that chain 3's
    /// draws keep the number 3 in file names, `id` lines and messages, as CmdStan's `id` does
    /// ([X]: fresh-user finding; the files used to be renumbered 1, 2, …). Falls back to
    /// 0, 1, … when `chain_ends` does not account for `chains`.
    pub fn chain_ids(&self) -> Vec<usize> {
        let kept: Vec<usize> = (0..self.chain_ends.len())
            .filter(|&c| match self.chain_ends[c] {
                ChainEnd::Finished => true,
                ChainEnd::Sampling(n) => n > 0,
                _ => false,
            })
            .collect();
        if self.interrupted && kept.len() == self.chains.len() {
            kept
        } else {
            (0..self.chains.len()).collect()
        }
    }

    /// For an interrupted run: how many of the chains had finished, were sampling, were in
    /// warmup and had not started when the stop came, with their numbers, and, when some had
    /// not started, why: chains run in parallel, at most [`McmcOutput::parallel_chains`] at a
    /// time, so the others wait for a free thread. E.g. "of the 4 chains, 2 were sampling
    /// (chains 1 and 3) and 2 had not started (chains 2 and 4): chains run in parallel, at most
    /// 2 at a time (one per core, or --threads), so chains 2 and 4 were still waiting for a free
    /// core when the stop came". Empty when `chain_ends` is empty.
    pub fn interruption_note(&self) -> String {
        let ends = &self.chain_ends;
        if ends.is_empty() {
            return String::new();
        }
        let pick = |f: &dyn Fn(&ChainEnd) -> bool| -> Vec<usize> {
            (0..ends.len())
                .filter(|&c| f(&ends[c]))
                .map(|c| c + 1)
                .collect()
        };
        let finished = pick(&|e| *e == ChainEnd::Finished);
        let sampling = pick(&|e| matches!(e, ChainEnd::Sampling(_)));
        let warmup = pick(&|e| matches!(e, ChainEnd::Warmup(_)));
        let waiting = pick(&|e| *e == ChainEnd::NotStarted);
        let mut groups = Vec::new();
        for (chains, one, many) in [
            (&finished, "had finished", "had finished"),
            (&sampling, "was sampling", "were sampling"),
            (&warmup, "was in warmup", "were in warmup"),
            (&waiting, "had not started", "had not started"),
        ] {
            if !chains.is_empty() {
                let verb = if chains.len() == 1 { one } else { many };
                groups.push(format!(
                    "{} {verb} ({})",
                    chains.len(),
                    chain_numbers(chains)
                ));
            }
        }
        let list = match groups.len() {
            1 => groups[0].clone(),
            n => format!("{} and {}", groups[..n - 1].join(", "), groups[n - 1]),
        };
        let mut s = format!("of the {} chains, {list}", ends.len());
        if !waiting.is_empty() {
            s.push_str(&format!(
                ": chains run in parallel, at most {} at a time (one per core, or --threads), so \
                 {} {} still waiting for a free core when the stop came",
                self.parallel_chains,
                chain_numbers(&waiting),
                if waiting.len() == 1 { "was" } else { "were" }
            ));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn output(ends: Vec<ChainEnd>, parallel: usize) -> McmcOutput {
        McmcOutput {
            dim: 1,
            method: super::super::mcmc::Method::Nuts,
            chains: Vec::new(),
            interrupted: true,
            flat: Vec::new(),
            flat_direction: None,
            notes: Vec::new(),
            chain_ends: ends,
            parallel_chains: parallel,
            warmup_stopped: Vec::new(),
        }
    }

    #[test]
    fn chain_numbers_are_listed_with_runs() {
        assert_eq!(chain_numbers(&[3]), "chain 3");
        assert_eq!(chain_numbers(&[3, 4]), "chains 3 and 4");
        assert_eq!(chain_numbers(&[1, 3, 4]), "chains 1, 3 and 4");
        assert_eq!(chain_numbers(&[1, 5, 6, 7, 8]), "chains 1 and 5–8");
    }

    #[test]
    fn two_cores_four_chains_say_why_two_had_not_started() {
        let o = output(
            vec![
                ChainEnd::Sampling(10),
                ChainEnd::NotStarted,
                ChainEnd::Sampling(12),
                ChainEnd::NotStarted,
            ],
            2,
        );
        assert_eq!(
            o.interruption_note(),
            "of the 4 chains, 2 were sampling (chains 1 and 3) and 2 had not started (chains 2 \
             and 4): chains run in parallel, at most 2 at a time (one per core, or --threads), \
             so chains 2 and 4 were still waiting for a free core when the stop came"
        );
    }

    #[test]
    fn every_state_is_counted_and_no_cause_without_waiting_chains() {
        let o = output(
            vec![
                ChainEnd::Finished,
                ChainEnd::Sampling(3),
                ChainEnd::Warmup(40),
            ],
            4,
        );
        assert_eq!(
            o.interruption_note(),
            "of the 3 chains, 1 had finished (chain 1), 1 was sampling (chain 2) and 1 was in \
             warmup (chain 3)"
        );
    }
}
