//! Missing data: a data variable declared `@missing` whose bound values have missing entries
//! (a CSV `NA`, `.` or empty cell; a JSON `null`, `"NA"` or `"NaN"`) gets one parameter per
//! missing entry, named `<name>_missing`, with the declaration's bounds. From `transformed
//! parameters` on, the model sees the variable with its observed values in place and those
//! parameters in the missing places, so that the statement that models the variable (say
//! `x ~ normal(mu_x, sigma_x);`) is the imputation model and every other use of `x` sees the
//! imputed values. This is PyMC's automatic imputation (an observed variable with masked entries
//! becomes partly a free variable), made explicit by the declaration (docs/missing_data.md).
//!
//! The semantic check guarantees what makes this a proper log density: the variable is the
//! variate of a distribution statement, and it is not used where only data is known (sizes,
//! `transformed data`, parameter declarations).

use super::*;

/// One imputed data variable: where its observed values live, which parameter holds its
/// missing entries, and where they go.
#[derive(Clone, Debug)]
pub(super) struct Imputed {
    /// The data variable's name.
    pub name: String,
    /// The top-level slot that holds the completed variable during an evaluation.
    pub slot: u32,
    /// The global that holds the observed values (NaN where missing).
    pub observed: usize,
    /// Index of the `<name>_missing` parameter in `Model::params`.
    pub param: usize,
    /// Array dimensions and element shape of the variable.
    pub arr: Vec<usize>,
    pub base: Base,
    /// The flat storage offset of each missing entry, in the parameter's order (Stan's output
    /// order of the variable: first index fastest).
    pub offsets: Vec<usize>,
    /// The 1-based indices into the variable of each missing entry, in the same order.
    pub indices: Vec<Vec<usize>>,
}

/// Where a missing entry of a data variable was imputed, for reports and output files.
#[derive(Clone, Debug, PartialEq)]
pub struct ImputedEntry {
    /// The parameter's output name, e.g. `x_missing[2]`.
    pub parameter: String,
    /// The data entry it stands for, e.g. `x[17]`.
    pub entry: String,
}

/// The missing entries of a value of shape (`arr`, `base`) with storage `values`: their
/// storage offsets and 1-based indices, in Stan's output order (first index fastest).
pub(super) fn missing_entries(
    arr: &[usize],
    base: Base,
    values: &[f64],
) -> (Vec<usize>, Vec<Vec<usize>>) {
    let mut dims: Vec<usize> = arr.to_vec();
    dims.extend(base.dims());
    let mut offsets = Vec::new();
    let mut indices = Vec::new();
    let mut idx = vec![0usize; dims.len()];
    for off in stan_order_offsets(arr, base) {
        if values[off].is_nan() {
            offsets.push(off);
            indices.push(idx.iter().map(|i| i + 1).collect());
        }
        for k in 0..dims.len() {
            idx[k] += 1;
            if idx[k] < dims[k] {
                break;
            }
            idx[k] = 0;
        }
    }
    (offsets, indices)
}

impl Model {
    /// Puts every imputed variable, completed with its `_missing` parameter's current value,
    /// into its slot (after the parameters are bound).
    pub(super) fn bind_imputed(&self, ctx: &mut Ctx) {
        for im in &self.imputed {
            let observed = &self.globals[im.observed];
            let mut elems: Vec<S> = (0..observed.num_elements())
                .map(|i| observed.elem(i))
                .collect();
            let missing = &ctx.env[self.params[im.param].slot as usize];
            for (k, &o) in im.offsets.iter().enumerate() {
                elems[o] = missing.elem(k);
            }
            let v = value::tensor_from_s(ctx.tape, im.arr.clone(), im.base, &elems);
            ctx.env[im.slot as usize] = v;
        }
    }

    /// The imputed entries of every `@missing` data variable: which output parameter stands for
    /// which data entry (empty when no data is missing).
    pub fn imputed_entries(&self) -> Vec<ImputedEntry> {
        let mut out = Vec::new();
        for im in &self.imputed {
            let info = &self.params[im.param];
            let p = &info.name;
            // a scalar parameter (the entry of a scalar `@missing real z`) has no index
            let scalar = info.arr.is_empty() && info.base == Base::Scalar;
            for (k, ix) in im.indices.iter().enumerate() {
                let ix: Vec<String> = ix.iter().map(|i| i.to_string()).collect();
                out.push(ImputedEntry {
                    parameter: if scalar {
                        p.clone()
                    } else {
                        format!("{p}[{}]", k + 1)
                    },
                    entry: if ix.is_empty() {
                        im.name.clone()
                    } else {
                        format!("{}[{}]", im.name, ix.join(","))
                    },
                });
            }
        }
        out
    }

    /// The names of the data variables declared `@missing`, whether or not the data bound to
    /// this model has missing entries.
    pub fn missing_declared(&self) -> &[String] {
        &self.missing_declared
    }

    /// The names of the data variables with imputed entries.
    pub fn imputed_variables(&self) -> Vec<&str> {
        self.imputed.iter().map(|im| im.name.as_str()).collect()
    }
}
