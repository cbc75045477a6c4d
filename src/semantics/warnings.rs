//! Warnings in the style of stanc3's pedantic mode: they travel beside a successful check and
//! never stop compilation.

use codespan_reporting::diagnostic::{Diagnostic, Label};

use crate::syntax::report::ToDiagnostic;
use crate::syntax::span::{FileId, Span};

/// A warning about a model that is valid but probably not what was meant.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Warning {
    /// A parameter that is never on the left of `~` nor inside a `target +=` (stanc3 pedantic:
    /// "parameter has no priors").
    #[error("parameter `{name}` has no prior; it gets an improper flat prior")]
    NoPrior {
        /// The name involved, as written in the source.
        name: String,
        /// Primary label: where the problem is.
        span: Span,
    },
    /// The left side of `~` is a non-linear function of parameters: the density is then over the
    /// transformed value, and the log absolute Jacobian determinant must be added by hand.
    #[error(
        "the left side of `~` is a non-linear transform of a parameter; it needs a Jacobian adjustment"
    )]
    NonLinearLhs {
        /// Primary label: where the problem is.
        span: Span,
        /// When the left side is (an element of) a transformed parameter or local assigned a
        /// non-linear function of parameters: its name and that value's span (secondary label).
        via: Option<(String, Span)>,
    },
    /// A parameter given `uniform(a, b)` whose declared bounds are not `<lower=a, upper=b>`.
    #[error("parameter `{name}` has a `uniform({a}, {b})` prior but is declared {declared}")]
    UniformBoundsMismatch {
        /// The name involved, as written in the source.
        name: String,
        /// The distribution's bounds as written.
        a: String,
        /// Upper bound of the `uniform` as written.
        b: String,
        /// "with `<lower=0>`" or "without bounds".
        declared: String,
        /// The declaration to write, e.g. "real<lower=0, upper=10> sigma".
        suggested_decl: String,
        /// Primary label: where the problem is.
        span: Span,
        /// Where the variable was declared (secondary label).
        decl_span: Span,
    },
    /// A parameter under a family whose support its declared bounds do not enforce, e.g. an
    /// unbounded `sigma ~ exponential(1)`: the sampler would propose values of zero density.
    #[error("parameter `{name}` may leave the support of `{family}`, which needs {support}")]
    ParameterOutsideSupport {
        /// The parameter.
        name: String,
        /// The family on the right of `~`.
        family: String,
        /// The support, in words.
        support: String,
        /// The bounds to declare, e.g. `<lower=0>`.
        needed: String,
        /// Primary label: the left side of `~`.
        span: Span,
        /// The parameter's declaration.
        decl_span: Span,
    },
    /// A bare parameter passed as an argument with a restricted support (a scale, a rate, a
    /// probability) whose declared bounds do not enforce it (stanc3 pedantic).
    #[error(
        "parameter `{name}` is the {role} of `{function}`, which needs {support}, but its bounds allow others"
    )]
    ArgumentOutsideSupport {
        /// The parameter.
        name: String,
        /// The argument's role, e.g. "Scale parameter".
        role: String,
        /// The family or function called.
        function: String,
        /// The argument's support, in words.
        support: String,
        /// The bounds to declare, e.g. `<lower=0>`.
        needed: String,
        /// Primary label: the argument.
        span: Span,
        /// The parameter's declaration.
        decl_span: Span,
    },
    /// `int / int`, which rounds towards zero.
    #[error("integer division `{expr}` rounds towards zero")]
    IntegerDivision {
        /// The division as written.
        expr: String,
        /// `a * 1.0 / b`.
        real_form: String,
        /// `a %/% b`.
        int_form: String,
        /// Primary label: where the problem is.
        span: Span,
    },
}

impl Warning {
    /// The span of the primary label.
    pub fn span(&self) -> Span {
        match self {
            Warning::NoPrior { span, .. }
            | Warning::NonLinearLhs { span, .. }
            | Warning::UniformBoundsMismatch { span, .. }
            | Warning::ParameterOutsideSupport { span, .. }
            | Warning::ArgumentOutsideSupport { span, .. }
            | Warning::IntegerDivision { span, .. } => *span,
        }
    }
}

impl ToDiagnostic for Warning {
    fn to_diagnostic(&self) -> Diagnostic<FileId> {
        let prim = |s: Span, m: &str| Label::primary(s.file, s.range()).with_message(m.to_string());
        let (labels, notes) = match self {
            Warning::NoPrior { name, span } => (
                vec![prim(*span, "declared here")],
                vec![format!(
                    "help: add a prior such as `{name} ~ normal(0, 10);` to the model block, \
                     unless a flat prior is intended"
                )],
            ),
            Warning::NonLinearLhs { span, via: None } => (
                vec![prim(*span, "non-linear function of a parameter")],
                vec![
                    "help: add the log absolute derivative of the transform to `target` (for \
                     `log(x) ~ …` that is `target += -log(x);`), or put the distribution on the \
                     parameter itself"
                        .to_string(),
                ],
            ),
            Warning::NonLinearLhs {
                span,
                via: Some((name, def)),
            } => (
                vec![
                    prim(*span, "non-linear function of a parameter"),
                    Label::secondary(def.file, def.range())
                        .with_message(format!("`{name}` is assigned this non-linear value")),
                ],
                vec![format!(
                    "help: `{name}` is a non-linear transform of parameters, so the density is \
                     over the transformed value: add the log absolute derivative of the \
                     transform to `target` (for a value `log(x)` that is `target += -log(x);`), \
                     or put the distribution on the parameter itself"
                )],
            ),
            Warning::UniformBoundsMismatch {
                name,
                suggested_decl,
                span,
                decl_span,
                ..
            } => (
                vec![
                    prim(*span, "uniform prior here"),
                    Label::secondary(decl_span.file, decl_span.range())
                        .with_message(format!("`{name}` declared here")),
                ],
                vec![format!(
                    "help: declare `{suggested_decl}` so that the sampler stays inside the support"
                )],
            ),
            Warning::ParameterOutsideSupport {
                name,
                needed,
                span,
                decl_span,
                ..
            } => (
                vec![
                    prim(*span, "distribution with a restricted support"),
                    Label::secondary(decl_span.file, decl_span.range())
                        .with_message(format!("`{name}` declared here")),
                ],
                vec![format!("help: declare `{name}` with `{needed}`")],
            ),
            Warning::ArgumentOutsideSupport {
                name,
                needed,
                span,
                decl_span,
                ..
            } => (
                vec![
                    prim(*span, "argument with a restricted support"),
                    Label::secondary(decl_span.file, decl_span.range())
                        .with_message(format!("`{name}` declared here")),
                ],
                vec![format!("help: declare `{name}` with `{needed}`")],
            ),
            Warning::IntegerDivision {
                real_form,
                int_form,
                span,
                ..
            } => (
                vec![prim(*span, "both operands are `int`")],
                vec![format!(
                    "help: write `{real_form}` for real division, or `{int_form}` if rounding is \
                     intended"
                )],
            ),
        };
        Diagnostic::warning()
            .with_message(self.to_string())
            .with_labels(labels)
            .with_notes(notes)
    }
}
