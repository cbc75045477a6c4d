//! How a [`SemanticError`] renders: its labels (primary on the problem, secondary on the
//! declarations involved) and `help:` notes.

use codespan_reporting::diagnostic::{Diagnostic, Label};

use super::SemanticError;
use crate::syntax::report::ToDiagnostic;
use crate::syntax::span::{FileId, Span};

fn primary(span: Span, msg: impl std::fmt::Display) -> Label<FileId> {
    Label::primary(span.file, span.range()).with_message(msg)
}

fn secondary(span: Span, msg: impl std::fmt::Display) -> Label<FileId> {
    Label::secondary(span.file, span.range()).with_message(msg)
}

impl ToDiagnostic for SemanticError {
    fn to_diagnostic(&self) -> Diagnostic<FileId> {
        use SemanticError::*;
        let mut labels = Vec::new();
        let mut notes: Vec<String> = Vec::new();
        match self {
            UndeclaredVariable {
                span, suggestion, ..
            } => {
                labels.push(primary(*span, "not declared in this scope"));
                if let Some(s) = suggestion {
                    notes.push(format!("help: replace it with `{s}`"));
                }
            }
            UsedBeforeDeclaration {
                name,
                span,
                decl_span,
            } => {
                labels.push(primary(*span, "used here"));
                labels.push(secondary(*decl_span, "declared later here"));
                notes.push(format!(
                    "help: move the declaration of `{name}` before its first use"
                ));
            }
            Redeclaration { span, previous, .. } => {
                labels.push(primary(*span, "declared again here"));
                labels.push(secondary(*previous, "first declared here"));
                notes.push("help: choose a different name (names cannot be shadowed)".into());
            }
            UnknownFunction {
                span, suggestion, ..
            } => {
                labels.push(primary(*span, "no function of this name"));
                if let Some(s) = suggestion {
                    notes.push(format!("help: replace it with `{s}`"));
                }
            }
            UnknownDistribution {
                span, suggestion, ..
            } => {
                labels.push(primary(*span, "no distribution of this name"));
                if let Some(s) = suggestion {
                    notes.push(format!("help: replace it with `{s}`"));
                }
            }
            WrongArity { span, found, .. } => {
                labels.push(primary(*span, format!("{found} given here")));
            }
            NoMatchingSignature {
                function,
                span,
                signatures,
                ..
            } => {
                labels.push(primary(*span, "no matching signature"));
                notes.push(format!("help: `{function}` accepts {signatures}"));
            }
            OperatorMismatch { span, hint, .. } => {
                labels.push(primary(*span, "operator not defined for these types"));
                if !hint.is_empty() {
                    notes.push(format!("help: {hint}"));
                }
            }
            BadAnnotation { span, hint, .. } => {
                labels.push(primary(*span, "annotation not allowed here"));
                notes.push(format!("help: {hint}"));
            }
            TypeMismatch { span, help, .. } => {
                labels.push(primary(*span, "wrong type"));
                if let Some(h) = help {
                    notes.push(format!("help: {h}"));
                }
            }
            ReadOnlyAssignment {
                span,
                decl_span,
                help,
                kind,
                ..
            } => {
                labels.push(primary(*span, "assigned here"));
                labels.push(secondary(*decl_span, format!("declared as a {kind} here")));
                notes.push(format!("help: {help}"));
            }
            InitialiserNotAllowed { block, span } => {
                labels.push(primary(*span, "initialiser not allowed here"));
                notes.push(if block == "data" {
                    "help: values of data variables come from the data file; remove `= …`".into()
                } else {
                    "help: parameters are sampled, not assigned; remove `= …`, or declare the \
                     variable in `transformed parameters`"
                        .into()
                });
            }
            DiscreteParameter { span, .. } => {
                labels.push(primary(*span, "declared `int` here"));
                notes.push(
                    "help: discrete parameters are not supported; marginalise them out \
                     (sum over their values with `log_sum_exp`) and declare a `real` instead"
                        .into(),
                );
            }
            TargetOutsideModel { span, .. } => {
                labels.push(primary(*span, "not allowed in this block"));
                notes.push("help: move this statement into the `model` block".into());
            }
            RngNotAllowed { span, .. } => {
                labels.push(primary(*span, "random number generator called here"));
                notes.push(
                    "help: `_rng` functions are allowed only in `generated quantities` and \
                     functions ending in `_rng`; for random constants, draw them outside the \
                     model and pass them as data"
                        .into(),
                );
            }
            ConstraintOnLocal { span, .. } => {
                labels.push(primary(*span, "constrained type on a local variable"));
                notes.push(
                    "help: constraints are allowed only on block-level declarations; declare a \
                     plain `real`, `vector` or `matrix` here"
                        .into(),
                );
            }
            NonDataSize {
                span,
                decl_span,
                var,
                kind,
                ..
            } => {
                labels.push(primary(*span, format!("`{var}` is not data")));
                labels.push(secondary(
                    *decl_span,
                    format!("`{var}` declared as a {kind} here"),
                ));
                notes.push(
                    "help: sizes of block-level declarations may use only variables of the \
                     `data` and `transformed data` blocks"
                        .into(),
                );
            }
            DiscreteFamilyOnReal {
                span,
                decl_span,
                suggested_decl,
                name,
                ..
            } => {
                labels.push(primary(*span, "needs integer values"));
                if let Some(d) = decl_span {
                    labels.push(secondary(*d, format!("`{name}` declared here")));
                }
                if let Some(s) = suggested_decl {
                    notes.push(format!("help: declare `{s}`"));
                }
            }
            SupportContradiction {
                span,
                decl_span,
                name,
                bound,
                ..
            } => {
                labels.push(primary(*span, "outside the support of this distribution"));
                labels.push(secondary(
                    *decl_span,
                    format!("`{name}` declared with `{bound}` here"),
                ));
                notes.push(format!(
                    "help: fix the bound of `{name}`, or choose a distribution whose support \
                     contains its values"
                ));
            }
            NonIntIndex { span, help, .. } => {
                labels.push(primary(*span, "not an integer"));
                notes.push(format!("help: {help}"));
            }
            SizeMismatch {
                sizes,
                operands,
                help,
                span,
                ..
            } => {
                labels.push(primary(*span, sizes));
                for (msg, decl) in operands {
                    labels.push(secondary(*decl, msg));
                }
                notes.push(format!("help: {help}"));
            }
            ArgumentSizeMismatch {
                args, decls, help, ..
            } => {
                for (msg, at) in args {
                    labels.push(primary(*at, msg));
                }
                for (msg, decl) in decls {
                    labels.push(secondary(*decl, msg));
                }
                notes.push(format!("help: {help}"));
            }
            AssignedSizeMismatch {
                found,
                decls,
                help,
                span,
                ..
            } => {
                labels.push(primary(*span, found));
                for (msg, decl) in decls {
                    labels.push(secondary(*decl, msg));
                }
                notes.push(format!("help: {help}"));
            }
            NegativeSizeArgument { value, span, .. } => {
                labels.push(primary(*span, format!("this size is {value}")));
                notes.push(
                    "help: a size counts elements: give 0 or more (0 makes an empty container)"
                        .into(),
                );
            }
            NegativeSize {
                size,
                value,
                sources,
                span,
                ..
            } => {
                let msg = if size.parse::<i64>().is_ok() {
                    "negative size".to_string()
                } else {
                    format!("this size is {value}")
                };
                labels.push(primary(*span, msg));
                for (msg, decl) in sources {
                    labels.push(secondary(*decl, msg));
                }
                notes.push(if sources.is_empty() {
                    "help: a size counts elements: write 0 or more (0 declares an empty \
                     container)"
                        .to_string()
                } else {
                    "help: a size counts elements, so it must be 0 or more: check the values \
                     it is computed from (labelled), or the arithmetic of the size"
                        .to_string()
                });
            }
            TooManyIndices { span, .. } => {
                labels.push(primary(*span, "too many indexes"));
            }
            MissingReturn { span, .. } => {
                labels.push(primary(*span, "declared with a non-void return type"));
                notes.push(
                    "help: add a `return` statement at the end of every path through the body"
                        .into(),
                );
            }
            BadReturn { span, .. } => {
                labels.push(primary(*span, "this return"));
            }
            ConditionalRequired { span, fixed, .. } => {
                labels.push(primary(*span, "`|` expected after the first argument"));
                notes.push(format!("help: write `{fixed}`"));
            }
            ConditionalNotAllowed { span, .. } => {
                labels.push(primary(*span, "`|` not allowed here"));
                notes.push("help: separate all arguments with `,`".into());
            }
            OutsideLoop { span, .. } => {
                labels.push(primary(*span, "not inside `for` or `while`"));
            }
            WrongSuffix {
                span, suggested, ..
            } => {
                labels.push(primary(*span, "wrong suffix"));
                notes.push(format!("help: write `{suggested}`"));
            }
            NonVoidStatement { span, .. } => {
                labels.push(primary(*span, "value discarded"));
                notes.push("help: assign the result to a variable, or remove the call".into());
            }
            VoidInExpression { span, .. } => {
                labels.push(primary(*span, "returns no value"));
            }
            NonDataArgument { span, .. } => {
                labels.push(primary(*span, "depends on parameters"));
                notes.push(
                    "help: pass data here, or remove the `data` qualifier from the function's \
                     argument"
                        .into(),
                );
            }
            DataOnlyBuiltin { function, span } => {
                labels.push(primary(*span, "depends on parameters"));
                notes.push(format!(
                    "help: `{function}` returns an integer, which carries no gradient: compute it \
                     from data (in `transformed data`, or from data variables here), or in \
                     `generated quantities`, where parameters are allowed"
                ));
            }
            BadOdeCall {
                span, label, help, ..
            } => {
                labels.push(primary(*span, label.clone()));
                notes.push(format!("help: {help}"));
            }
            DeclaredInLaterBlock {
                name,
                span,
                decl_span,
                here,
                ..
            } => {
                labels.push(primary(*span, "used here"));
                labels.push(secondary(*decl_span, "declared here"));
                notes.push(format!(
                    "help: blocks run in order; declare `{name}` in the `{here}` block or an \
                     earlier one"
                ));
            }
            NoLogCdf { span, .. } => {
                labels.push(primary(*span, "needs the log CDF"));
                let with_cdf: Vec<&str> = crate::distributions::registry::FAMILIES
                    .iter()
                    .filter(|f| crate::distributions::has_log_cdf(f.family))
                    .map(|f| f.name)
                    .collect();
                notes.push(format!("help: log CDFs exist for {}", with_cdf.join(", ")));
            }
            FunctionRedefinition { span, previous, .. } => {
                labels.push(primary(*span, "defined again here"));
                labels.push(secondary(*previous, "first defined here"));
            }
            UnusedParameter { name, span } => {
                labels.push(primary(*span, "not used in the log density"));
                notes.push(format!(
                    "help: give `{name}` a prior (e.g. `{name} ~ normal(0, 1);`) and use it in the \
                     likelihood, declare both bounds (a uniform prior), or remove it; a quantity \
                     computed only from draws belongs in `generated quantities`"
                ));
            }
            BoundsReversed { span, .. } => {
                labels.push(primary(*span, "no value satisfies these bounds"));
                notes.push(
                    "help: write the smaller value as `lower` and the larger as `upper`".into(),
                );
            }
            DivisionByZero { span, .. } => {
                labels.push(primary(*span, "the divisor is 0"));
            }
            IntOverflow { span, .. } => {
                labels.push(primary(*span, "overflows int at every evaluation"));
            }
            IndexOutOfRange {
                name,
                size,
                span,
                decl_span,
                ..
            } => {
                labels.push(primary(*span, "out of range"));
                match size {
                    Some(n) => {
                        labels.push(secondary(*decl_span, format!("declared with size {n}")));
                        notes.push(format!(
                            "help: indexes start at 1, so an index into this dimension of \
                             `{name}` runs from 1 to {n}"
                        ));
                    }
                    None => {
                        labels.push(secondary(*decl_span, "declared here"));
                        notes.push(format!(
                            "help: indexes start at 1: the first element of `{name}` is `{name}[1]`"
                        ));
                    }
                }
            }
            LiteralSizeMismatch { span, .. } => {
                labels.push(primary(*span, "the sizes differ"));
                notes.push("help: declare both with the same size".into());
            }
            LiteralOutcomeOutsideSupport {
                span,
                support,
                family,
                ..
            } => {
                labels.push(primary(*span, format!("must be {support}")));
                notes.push(format!(
                    "help: a `{family}` outcome outside its support has probability (density) \
                     zero for every value of the parameters, so the model has no posterior; \
                     use an outcome that is {support}"
                ));
            }
            LiteralOutsideSupport {
                span,
                support,
                example,
                declared,
                ..
            } => {
                labels.push(primary(*span, format!("must be {support}")));
                if let Some(init) = declared {
                    labels.push(secondary(*init, "set here and never assigned"));
                }
                notes.push(format!(
                    "help: every evaluation of the density would fail; use a value that is \
                     {support}, e.g. `{example}`"
                ));
            }
            ImputedTooEarly {
                span, decl_span, ..
            } => {
                labels.push(primary(*span, "its missing entries are not known here"));
                labels.push(secondary(*decl_span, "declared `@missing` here"));
                notes.push(
                    "help: compute what needs it in `transformed parameters`, `model` or \
                     `generated quantities`; sizes and transformed data may use only complete data"
                        .into(),
                );
            }
            ImputedWithoutDistribution { name, span } => {
                labels.push(primary(*span, "no distribution for its missing entries"));
                notes.push(format!(
                    "help: model the variable in the `model` block, e.g. \
                     `{name} ~ normal(mu_{name}, sigma_{name});` with those two as parameters; \
                     its observed entries then inform the model of the missing ones"
                ));
            }
            EndlessLoop { span, .. } => {
                labels.push(primary(*span, "always true"));
                notes.push(
                    "help: loop on a condition that becomes false, e.g. `while (i <= n)`, or \
                     leave the loop with `break` (a `for` loop is often what is meant)"
                        .into(),
                );
            }
        }
        Diagnostic::error()
            .with_message(self.to_string())
            .with_labels(labels)
            .with_notes(notes)
    }
}
