"""Reads bayesc's MCMC output with cmdstanpy and ArviZ (the check described in README).

Setup: python3 -m venv /tmp/cmdstanpy_env && /tmp/cmdstanpy_env/bin/pip install cmdstanpy arviz xarray
Run:   bayesc fit examples/labour/model.bayes --data examples/labour/labour.csv --method nuts \
           --seed 1 --output /tmp/lab/labour.csv
       /tmp/cmdstanpy_env/bin/python tests/reference/read_with_cmdstanpy.py '/tmp/lab/labour_*.csv'
"""
import glob, sys, warnings
warnings.filterwarnings("ignore")
import cmdstanpy, arviz as az
files = sorted(glob.glob(sys.argv[1]))
fit = cmdstanpy.from_csv(files)
print(type(fit).__name__, fit.chains, fit.num_draws_sampling, fit.metric_type, fit.step_size)
ds = fit.draws_xr()
print(ds)
print("beta mean", ds["beta"].mean(("chain", "draw")).values)
idata = az.from_cmdstan(posterior=files)
print(idata)
print(az.summary(idata, var_names=["alpha", "beta"]).iloc[:, :4])
print(idata.sample_stats)
