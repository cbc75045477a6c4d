"""Reads bayesc's variational draws files with cmdstanpy (and ArviZ when it is installed).

The check behind tests/vi_csv_header.rs: cmdstanpy's `from_csv` must return a CmdStanVB with
the file's eta, its mean row and its draws, for every variational method. Exits 1 if a file
is not read.

Setup: python3 -m venv /tmp/vi_env && /tmp/vi_env/bin/pip install cmdstanpy arviz
       (for the older reader: a second venv with cmdstanpy==1.2.5)
Run:   for m in qbvi qnvb ivon bbvi vlaplace; do
           bayesc fit examples/labour/model.bayes --data examples/labour/labour.csv \
               --method $m --seed 1 -q --draws 200 -o /tmp/vi/$m.csv; done
       /tmp/vi_env/bin/python tests/reference/read_vi_with_cmdstanpy.py /tmp/vi/*.csv
"""
import sys
import warnings

warnings.filterwarnings("ignore")
import cmdstanpy  # noqa: E402

ok = True
for f in sys.argv[1:]:
    try:
        fit = cmdstanpy.from_csv(f)
        config = fit.metadata.cmdstan_config
        print(f"{f}: cmdstanpy {cmdstanpy.__version__} {type(fit).__name__} eta {fit.eta} "
              f"method {config.get('variational_method')} grad_samples {config.get('grad_samples')} "
              f"elbo_samples {config.get('elbo_samples')} mean row {fit.variational_params_np.shape} "
              f"draws {fit.variational_sample.shape}")
    except Exception as e:  # report every file, then fail
        ok = False
        print(f"{f}: FAILED {e!r} (cause {e.__cause__!r})")
    try:
        import arviz as az
    except ImportError:
        continue
    try:
        idata = az.from_cmdstan(posterior=f)
        # ArviZ reads the mean row as a draw (as for CmdStan's own variational files)
        print(f"   arviz {az.__version__}: {dict(idata.posterior.sizes)}")
    except Exception as e:
        ok = False
        print(f"   arviz FAILED {e!r}")
sys.exit(0 if ok else 1)
