use super::*;

const LABOUR: &str = r#"data {
  int<lower=0> N;                      // rows of the CSV, inferred
  array[N] int<lower=0, upper=1> lfp;  // CSV column
  vector[N] k5;  vector[N] k618;  vector[N] age;  vector[N] wc;
  vector[N] hc;  vector[N] lwg;   vector[N] inc;
}
transformed data {
  matrix[N, 7] X = append_col(k5, k618, age, wc, hc, lwg, inc);
}
parameters {
  real alpha;
  vector[7] beta;
}
model {
  alpha ~ normal(0, 10);
  beta ~ normal(0, 10);
  lfp ~ bernoulli_logit(alpha + X * beta);
}
"#;

fn parse(src: &str) -> Program {
    match parse_program(src, 0) {
        Ok(p) => p,
        Err(e) => panic!("parse failed: {e} at {:?}", e.span()),
    }
}

/// An S-expression of `e`, so that tests can state the tree shape in one string.
fn sx(e: &Expr) -> String {
    match &e.kind {
        ExprKind::IntLit(v) => v.to_string(),
        ExprKind::RealLit(v) => format!("{v:?}"),
        ExprKind::Var(n) => n.clone(),
        ExprKind::Binary { op, lhs, rhs } => {
            format!("({} {} {})", op.symbol(), sx(lhs), sx(rhs))
        }
        ExprKind::Unary { op, operand } => {
            let o = match op {
                UnOp::Neg => "neg",
                UnOp::Plus => "pos",
                UnOp::Not => "not",
            };
            format!("({o} {})", sx(operand))
        }
        ExprKind::Call {
            name,
            args,
            conditional,
        } => {
            let args: Vec<String> = args.iter().map(sx).collect();
            let sep = if *conditional { " | " } else { " " };
            format!("({}{}{})", name.name, sep, args.join(" "))
        }
        ExprKind::Index { base, indices } => {
            let idx: Vec<String> = indices.iter().map(sx_index).collect();
            format!("(idx {} [{}])", sx(base), idx.join(", "))
        }
        ExprKind::Ternary {
            cond,
            then,
            otherwise,
        } => format!("(? {} {} {})", sx(cond), sx(then), sx(otherwise)),
        ExprKind::RowVectorLit(v) => {
            format!("[{}]", v.iter().map(sx).collect::<Vec<_>>().join(" "))
        }
        ExprKind::ArrayLit(v) => {
            format!("{{{}}}", v.iter().map(sx).collect::<Vec<_>>().join(" "))
        }
        ExprKind::Transpose(x) => format!("(' {})", sx(x)),
    }
}

fn sx_index(i: &Index) -> String {
    match i {
        Index::Single(e) => sx(e),
        Index::Range(lo, hi) => format!(
            "{}:{}",
            lo.as_ref().map(sx).unwrap_or_default(),
            hi.as_ref().map(sx).unwrap_or_default()
        ),
        Index::All => "all".to_string(),
    }
}

fn ex(src: &str) -> String {
    match parse_expression(src, 0) {
        Ok(e) => sx(&e),
        Err(err) => panic!("`{src}` failed: {err}"),
    }
}

/// The single statement of `model { <src> }`.
fn stmt(src: &str) -> Stmt {
    let p = parse(&format!("model {{ {src} }}"));
    assert_eq!(p.model.len(), 1, "one statement in `{src}`");
    p.model.into_iter().next().unwrap()
}

#[test]
fn labour_model_parses() {
    let p = parse(LABOUR);
    assert_eq!(p.data.len(), 9);
    assert_eq!(p.transformed_data.len(), 1);
    assert_eq!(p.parameters.len(), 2);
    assert_eq!(p.model.len(), 3);
}

#[test]
fn posteriordb_models_parse() {
    let dir = std::path::Path::new("/work/shared/validation/posteriordb");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut parsed = 0;
    for e in entries.flatten() {
        let path = e.path().join("model.stan");
        if let Ok(src) = std::fs::read_to_string(&path) {
            parsed += 1;
            if let Err(err) = parse_program(&src, 0) {
                let s = err.span();
                panic!("{}: {err} at {:?} {:?}", path.display(), s, &src[s.start..]);
            }
        }
    }
    assert!(
        parsed >= 10,
        "expected the posteriordb models, found {parsed}"
    );
}

#[test]
fn precedence_and_associativity() {
    assert_eq!(ex("-a^2"), "(neg (^ a 2))");
    assert_eq!(ex("a - b - c"), "(- (- a b) c)");
    assert_eq!(ex("a ^ b ^ c"), "(^ a (^ b c))");
    assert_eq!(ex("a ? b : c ? d : e"), "(? a b (? c d e))");
    assert_eq!(ex("x'*y"), "(* (' x) y)");
    assert_eq!(ex("a + b * c"), "(+ a (* b c))");
    assert_eq!(ex("a * b + c"), "(+ (* a b) c)");
    assert_eq!(ex("a || b && c"), "(|| a (&& b c))");
    assert_eq!(ex("a == b < c"), "(== a (< b c))");
    assert_eq!(ex("a < b + 1"), "(< a (+ b 1))");
    assert_eq!(ex("!a && b"), "(&& (not a) b)");
    assert_eq!(ex("a * b \\ c"), "(* a (\\ b c))");
    assert_eq!(ex("a \\ b .* c"), "(\\ a (.* b c))");
    assert_eq!(ex("a ./ b * c"), "(* (./ a b) c)");
    assert_eq!(ex("-a .^ 2"), "(neg (.^ a 2))");
    assert_eq!(ex("a % b %/% c"), "(%/% (% a b) c)");
    assert_eq!(ex("+a >= -b"), "(>= (pos a) (neg b))");
    assert_eq!(ex("a != b || c <= d"), "(|| (!= a b) (<= c d))");
    assert_eq!(ex("(a + b) * c"), "(* (+ a b) c)");
    assert_eq!(ex("2 ^ -1"), "(^ 2 (neg 1))");
    assert_eq!(ex("a > b ? 1 : 0"), "(? (> a b) 1 0)");
    assert_eq!(ex("x[i]'"), "(' (idx x [i]))");
    assert_eq!(ex("-x[1]^2"), "(neg (^ (idx x [1]) 2))");
}

#[test]
fn literals() {
    assert_eq!(ex("1.5"), "1.5");
    assert_eq!(ex(".5"), "0.5");
    assert_eq!(ex("2."), "2.0");
    assert_eq!(ex("1e-3"), "0.001");
    assert_eq!(ex("1.2E+4"), "12000.0");
    assert_eq!(ex("42"), "42");
    assert_eq!(ex("[a, b]"), "[a b]");
    assert_eq!(ex("[[1, 2], [3, 4]]"), "[[1 2] [3 4]]");
    assert_eq!(ex("{a, b}"), "{a b}");
    // `int` is 32-bit, as in Stan
    assert_eq!(ex("2147483647"), "2147483647");
    for (text, end) in [("2147483648", 10), ("9223372036854775808", 19)] {
        let err = parse_expression(text, 0).unwrap_err();
        assert!(
            matches!(err, SyntaxError::IntegerTooLarge { .. }),
            "{err:?}"
        );
        assert_eq!(err.span(), Span::new(0, 0, end));
    }
    let err = parse_expression("2e400", 0).unwrap_err();
    assert!(matches!(err, SyntaxError::RealTooLarge { .. }), "{err:?}");
}

#[test]
fn calls_and_conditional_calls() {
    assert_eq!(ex("f()"), "(f )");
    assert_eq!(ex("f(a, b + 1)"), "(f a (+ b 1))");
    assert_eq!(
        ex("normal_lpdf(y | mu, sigma)"),
        "(normal_lpdf | y mu sigma)"
    );
    assert_eq!(ex("std_normal_lpdf(y |)"), "(std_normal_lpdf | y)");
    assert_eq!(ex("f(a || b)"), "(f (|| a b))");
    assert_eq!(ex("target()"), "(target )");
    let e = parse_expression("normal_lpdf(y | mu, sigma)", 0).unwrap();
    let ExprKind::Call { name, args, .. } = &e.kind else {
        panic!("call expected")
    };
    assert_eq!(name.span, Span::new(0, 0, 11));
    assert_eq!(args[0].span, Span::new(0, 12, 13));
    assert_eq!(e.span, Span::new(0, 0, 26));
}

#[test]
fn indexing_forms() {
    assert_eq!(ex("x[i, j]"), "(idx x [i, j])");
    assert_eq!(ex("x[i][j]"), "(idx (idx x [i]) [j])");
    assert_eq!(ex("x[lo:hi]"), "(idx x [lo:hi])");
    assert_eq!(ex("x[lo:]"), "(idx x [lo:])");
    assert_eq!(ex("x[:hi]"), "(idx x [:hi])");
    assert_eq!(ex("x[:]"), "(idx x [all])");
    assert_eq!(ex("x[, j]"), "(idx x [all, j])");
    assert_eq!(ex("x[i, ]"), "(idx x [i, all])");
    assert_eq!(ex("X[ : , i - 1]"), "(idx X [all, (- i 1)])");
    assert_eq!(ex("x[2:N - 1]"), "(idx x [2:(- N 1)])");
    assert_eq!(ex("x[idx[1]]"), "(idx x [(idx idx [1])])");
}

#[test]
fn spans_are_byte_offsets() {
    let e = parse_expression("a + b*c", 0).unwrap();
    assert_eq!(e.span, Span::new(0, 0, 7));
    let ExprKind::Binary { rhs, .. } = &e.kind else {
        panic!("binary expected")
    };
    assert_eq!(rhs.span, Span::new(0, 4, 7));
    let e = parse_expression("-(a)", 3).unwrap();
    assert_eq!(e.span, Span::new(3, 0, 4));
    let p = parse("data { int N; }\nmodel { }\n");
    assert_eq!(p.block_spans.data, Some(Span::new(0, 0, 4)));
    assert_eq!(p.block_spans.model, Some(Span::new(0, 16, 21)));
    assert_eq!(p.block_spans.parameters, None);
    assert_eq!(p.data[0].span, Span::new(0, 7, 13));
    assert_eq!(p.data[0].name.span, Span::new(0, 11, 12));
}

#[test]
fn all_blocks_in_order() {
    let p = parse(
        "include \"lib.bayes\";\nfunctions { real f(real x) { return x; } }\ndata { int N; }\n\
             transformed data { int M = N; }\nparameters { real mu; }\n\
             transformed parameters { real nu = mu; }\nmodel { mu ~ normal(0, 1); }\n\
             generated quantities { real z = mu; }",
    );
    assert_eq!(p.includes.len(), 1);
    assert_eq!(p.includes[0].path, "lib.bayes");
    assert_eq!(p.functions.len(), 1);
    assert_eq!(p.transformed_data.len(), 1);
    assert_eq!(p.transformed_parameters.len(), 1);
    assert_eq!(p.generated_quantities.len(), 1);
    let b = &p.block_spans;
    for s in [
        b.functions,
        b.data,
        b.transformed_data,
        b.parameters,
        b.transformed_parameters,
        b.model,
        b.generated_quantities,
    ] {
        assert!(s.is_some());
    }
    let tp = b.transformed_parameters.unwrap();
    assert_eq!(
        &"include \"lib.bayes\";\nfunctions { real f(real x) { return x; } }\ndata { int N; }\n\
             transformed data { int M = N; }\nparameters { real mu; }\n\
             transformed parameters { real nu = mu; }"[tp.start..tp.end],
        "transformed parameters"
    );
    assert_eq!(parse("").data.len(), 0);
    assert_eq!(
        parse("// only a comment\n/* and\nanother */").model.len(),
        0
    );
}

#[test]
fn types_and_constraints() {
    let p = parse(
        "data {\n int<lower=0> N;\n real<lower=0, upper=1 - a> p;\n real<upper=b, lower=a> q;\n\
             vector<lower=0>[N] v;\n row_vector[N] r;\n matrix<lower=-1, upper=1>[N, 3] m;\n\
             simplex[K] s;\n ordered[K] o;\n positive_ordered[K] po;\n cholesky_factor_corr[K] lc;\n\
             cholesky_factor_cov[K] lv;\n cov_matrix[K] cv;\n corr_matrix[K] cr;\n\
             array[J, 2] vector<offset=mu, multiplier=tau>[K] z;\n real<lower=(a > b ? a : b)> w;\n}",
    );
    let d = &p.data;
    assert_eq!(d.len(), 15);
    assert_eq!(d[0].ty.base, SizedBase::Int);
    assert_eq!(sx(d[0].ty.constraint.lower.as_ref().unwrap()), "0");
    assert_eq!(sx(d[1].ty.constraint.upper.as_ref().unwrap()), "(- 1 a)");
    assert_eq!(sx(d[2].ty.constraint.lower.as_ref().unwrap()), "a");
    assert_eq!(sx(d[2].ty.constraint.upper.as_ref().unwrap()), "b");
    assert!(matches!(&d[3].ty.base, SizedBase::Vector(n) if sx(n) == "N"));
    assert!(matches!(&d[4].ty.base, SizedBase::RowVector(_)));
    assert!(matches!(&d[5].ty.base, SizedBase::Matrix(r, c) if sx(r) == "N" && sx(c) == "3"));
    assert_eq!(sx(d[5].ty.constraint.lower.as_ref().unwrap()), "(neg 1)");
    assert!(matches!(&d[6].ty.base, SizedBase::Simplex(_)));
    assert!(matches!(&d[7].ty.base, SizedBase::Ordered(_)));
    assert!(matches!(&d[8].ty.base, SizedBase::PositiveOrdered(_)));
    assert!(matches!(&d[9].ty.base, SizedBase::CholeskyFactorCorr(_)));
    assert!(matches!(&d[10].ty.base, SizedBase::CholeskyFactorCov(_)));
    assert!(matches!(&d[11].ty.base, SizedBase::CovMatrix(_)));
    assert!(matches!(&d[12].ty.base, SizedBase::CorrMatrix(_)));
    let z = &d[13].ty;
    assert_eq!(z.array_dims.iter().map(sx).collect::<Vec<_>>(), ["J", "2"]);
    assert_eq!(sx(z.constraint.offset.as_ref().unwrap()), "mu");
    assert_eq!(sx(z.constraint.multiplier.as_ref().unwrap()), "tau");
    assert!(z.constraint.lower.is_none());
    assert_eq!(
        sx(d[14].ty.constraint.lower.as_ref().unwrap()),
        "(? (> a b) a b)"
    );
    assert_eq!(d[14].name.name, "w");
}

#[test]
fn bad_constraints_are_rejected() {
    let e = parse_program("data { real<lower=0, lower=1> x; }", 0).unwrap_err();
    assert!(matches!(e, SyntaxError::InvalidConstraint { .. }), "{e:?}");
    let e = parse_program("data { real<lower=0, offset=1> x; }", 0).unwrap_err();
    assert!(matches!(e, SyntaxError::InvalidConstraint { .. }), "{e:?}");
    assert_eq!(e.span(), Span::new(0, 21, 27));
    // A top-level comparison inside `<...>` is not a bound expression.
    assert!(parse_program("data { real<lower=a > b> x; }", 0).is_err());
}

#[test]
fn declarations_with_initialisers() {
    let s = stmt("vector[N] mu = X * beta + alpha;");
    let StmtKind::Decl(d) = s.kind else {
        panic!("declaration expected")
    };
    assert_eq!(d.name.name, "mu");
    assert_eq!(sx(d.init.as_ref().unwrap()), "(+ (* X beta) alpha)");
    let s = stmt("real x;");
    assert!(matches!(s.kind, StmtKind::Decl(VarDecl { init: None, .. })));
}

#[test]
fn assignments() {
    let cases = [
        ("x = 1;", AssignOp::Assign),
        ("x += 1;", AssignOp::AddAssign),
        ("x -= 1;", AssignOp::SubAssign),
        ("x *= 1;", AssignOp::MulAssign),
        ("x /= 1;", AssignOp::DivAssign),
        ("x .*= 1;", AssignOp::EltMulAssign),
        ("x ./= 1;", AssignOp::EltDivAssign),
    ];
    for (src, want) in cases {
        let StmtKind::Assign { op, lhs, rhs } = stmt(src).kind else {
            panic!("assignment expected for {src}")
        };
        assert_eq!(op, want, "{src}");
        assert_eq!(lhs.name.name, "x");
        assert_eq!(sx(&rhs), "1");
    }
    let StmtKind::Assign { lhs, .. } = stmt("x[i, j] = 0;").kind else {
        panic!("assignment expected")
    };
    assert_eq!(lhs.indices.len(), 1);
    assert_eq!(lhs.indices[0].len(), 2);
    let StmtKind::Assign { lhs, .. } = stmt("x[i][2:3] = 0;").kind else {
        panic!("assignment expected")
    };
    assert_eq!(lhs.indices.len(), 2);
    assert_eq!(sx_index(&lhs.indices[1][0]), "2:3");
    assert_eq!(lhs.span, Span::new(0, 8, 17));
}

#[test]
fn tilde_and_target() {
    let StmtKind::Tilde {
        lhs,
        dist,
        args,
        truncation,
    } = stmt("y[n] ~ normal(mu, sigma);").kind
    else {
        panic!("tilde expected")
    };
    assert_eq!(sx(&lhs), "(idx y [n])");
    assert_eq!(dist.name, "normal");
    assert_eq!(args.len(), 2);
    assert!(truncation.is_none());
    let StmtKind::Tilde { truncation, .. } = stmt("y ~ normal(0, 1) T[0, ];").kind else {
        panic!("tilde expected")
    };
    let t = truncation.unwrap();
    assert_eq!(sx(t.lower.as_ref().unwrap()), "0");
    assert!(t.upper.is_none());
    let StmtKind::Tilde { truncation, .. } = stmt("y ~ normal(0, 1) T[, U];").kind else {
        panic!("tilde expected")
    };
    let t = truncation.unwrap();
    assert!(t.lower.is_none());
    assert_eq!(sx(t.upper.as_ref().unwrap()), "U");
    let StmtKind::Tilde { truncation, .. } = stmt("y ~ normal(0, 1) T[L, U];").kind else {
        panic!("tilde expected")
    };
    assert!(truncation.unwrap().upper.is_some());
    let StmtKind::TargetPlus(e) = stmt("target += normal_lpdf(y | 0, 1);").kind else {
        panic!("target += expected")
    };
    assert_eq!(sx(&e), "(normal_lpdf | y 0 1)");
    // `T` is an ordinary name outside truncations.
    let StmtKind::Tilde { lhs, .. } = stmt("y[T] ~ std_normal();").kind else {
        panic!("tilde expected")
    };
    assert_eq!(sx(&lhs), "(idx y [T])");
}

#[test]
fn control_flow() {
    let StmtKind::For { var, lo, hi, body } = stmt("for (i in 1:N) y[i] ~ normal(0, 1);").kind
    else {
        panic!("for expected")
    };
    assert_eq!(var.name, "i");
    assert_eq!((sx(&lo), sx(&hi)), ("1".to_string(), "N".to_string()));
    assert!(matches!(body.kind, StmtKind::Tilde { .. }));
    let StmtKind::For { lo, .. } = stmt("for (t in (K + 1) : T) { }").kind else {
        panic!("for expected")
    };
    assert_eq!(sx(&lo), "(+ K 1)");
    let StmtKind::ForEach {
        var, collection, ..
    } = stmt("for (x in xs) { print(x); }").kind
    else {
        panic!("foreach expected")
    };
    assert_eq!((var.name.as_str(), sx(&collection).as_str()), ("x", "xs"));
    let StmtKind::While { cond, body } = stmt("while (n < 10) { n += 1; break; continue; }").kind
    else {
        panic!("while expected")
    };
    assert_eq!(sx(&cond), "(< n 10)");
    let StmtKind::Block(inner) = body.kind else {
        panic!("block expected")
    };
    assert_eq!(inner.len(), 3);
    assert_eq!(inner[1].kind, StmtKind::Break);
    assert_eq!(inner[2].kind, StmtKind::Continue);
    let StmtKind::If {
        cond,
        then,
        otherwise,
    } = stmt("if (a) x = 1; else if (b) x = 2; else x = 3;").kind
    else {
        panic!("if expected")
    };
    assert_eq!(sx(&cond), "a");
    assert!(matches!(then.kind, StmtKind::Assign { .. }));
    let other = otherwise.unwrap();
    assert!(matches!(
        other.kind,
        StmtKind::If {
            otherwise: Some(_),
            ..
        }
    ));
    let StmtKind::If { otherwise, .. } = stmt("if (a) { }").kind else {
        panic!("if expected")
    };
    assert!(otherwise.is_none());
}

#[test]
fn print_reject_call_statements() {
    let StmtKind::Print(args) = stmt("print(\"x = \", x, \"\");").kind else {
        panic!("print expected")
    };
    assert_eq!(args.len(), 3);
    assert!(matches!(&args[0], PrintArg::Str(s, sp) if s == "x = " && *sp == Span::new(0, 14, 20)));
    assert!(matches!(&args[1], PrintArg::Expr(e) if sx(e) == "x"));
    assert!(matches!(&args[2], PrintArg::Str(s, _) if s.is_empty()));
    let StmtKind::Reject(args) = stmt("reject(\"sigma must be positive: \", sigma);").kind else {
        panic!("reject expected")
    };
    assert_eq!(args.len(), 2);
    let StmtKind::Expr(e) = stmt("my_void(x, 2);").kind else {
        panic!("call statement expected")
    };
    assert_eq!(sx(&e), "(my_void x 2)");
}

#[test]
fn functions_block() {
    let p = parse(
        "functions {\n  real foo(real x, data vector y);\n  real foo(real x, data vector y) { return x + sum(y); }\n\
             void bar(array[] int n, array[,] real z, matrix m, row_vector r) { print(n); return; }\n\
             array[] real baz(int k) { return {1.0}; }\n}",
    );
    let f = &p.functions;
    assert_eq!(f.len(), 4);
    assert!(f[0].body.is_none());
    assert_eq!(f[0].name.name, "foo");
    assert_eq!(f[0].params.len(), 2);
    assert!(!f[0].params[0].data_only);
    assert!(f[0].params[1].data_only);
    assert_eq!(f[0].params[1].ty.base, UnsizedBase::Vector);
    assert!(matches!(
        &f[0].return_type,
        ReturnType::Type(UnsizedType {
            base: UnsizedBase::Real,
            array_dims: 0,
            ..
        })
    ));
    assert!(f[1].body.is_some());
    assert_eq!(f[2].return_type, ReturnType::Void);
    assert_eq!(f[2].params[0].ty.array_dims, 1);
    assert_eq!(f[2].params[0].ty.base, UnsizedBase::Int);
    assert_eq!(f[2].params[1].ty.array_dims, 2);
    assert_eq!(f[2].params[2].ty.base, UnsizedBase::Matrix);
    assert_eq!(f[2].params[3].ty.base, UnsizedBase::RowVector);
    let Some(Stmt {
        kind: StmtKind::Block(body),
        ..
    }) = &f[2].body
    else {
        panic!("body expected")
    };
    assert_eq!(body[1].kind, StmtKind::Return(None));
    assert!(matches!(
        &f[3].return_type,
        ReturnType::Type(UnsizedType { array_dims: 1, .. })
    ));
}

#[test]
fn comments_and_identifiers() {
    let p = parse(
        "/* header\n comment */ data { int N; // trailing\n real x_1; real _y; real inner; real T; }",
    );
    let names: Vec<&str> = p.data.iter().map(|d| d.name.name.as_str()).collect();
    assert_eq!(names, ["N", "x_1", "_y", "inner", "T"]);
    assert!(parse_program("data { real __x; }", 0).is_err());
    assert!(parse_program("data { real 1x; }", 0).is_err());
    let e = parse_program("data { real lower; }", 0).unwrap_err();
    assert!(matches!(&e, SyntaxError::ReservedWord { word, .. } if word == "lower"));
    assert_eq!(e.span(), Span::new(0, 12, 17));
    let e = parse_program("model { for (in in 1:3) { } }", 0).unwrap_err();
    assert!(
        matches!(&e, SyntaxError::ReservedWord { word, .. } if word == "in"),
        "{e:?}"
    );
}

#[test]
fn old_syntax_is_rejected_with_rewrites() {
    let e = parse_program("model { x <- 3; }", 0).unwrap_err();
    assert_eq!(
        e,
        SyntaxError::OldAssignment {
            span: Span::new(0, 10, 12)
        }
    );
    let e = parse_program("model { increment_log_prob(normal_log(y, 0, 1)); }", 0).unwrap_err();
    assert!(
        matches!(&e, SyntaxError::OldTargetSyntax { word, .. } if word == "increment_log_prob")
    );
    let e = parse_program("data { real<lower=0> x[N, 2]; }", 0).unwrap_err();
    assert_eq!(
        e,
        SyntaxError::OldArraySyntax {
            span: Span::new(0, 22, 28),
            rewrite: "array[N, 2] real<lower=0> x".to_string()
        }
    );
}

#[test]
fn block_order_and_duplicates() {
    let e = parse_program("model { }\nparameters { }", 0).unwrap_err();
    assert_eq!(
        e,
        SyntaxError::BlockOutOfOrder {
            block: "parameters",
            span: Span::new(0, 10, 20),
            after: "model",
            after_span: Span::new(0, 0, 5),
        }
    );
    let e = parse_program("data { }\ndata { }", 0).unwrap_err();
    assert!(matches!(
        e,
        SyntaxError::DuplicateBlock { block: "data", .. }
    ));
}

#[test]
fn error_positions() {
    let e = parse_program("model {\n  x ~ normal(0, 1)\n  y ~ normal(0, 1);\n}", 0).unwrap_err();
    assert!(matches!(e, SyntaxError::MissingSemicolon { .. }), "{e:?}");
    assert_eq!(e.span(), Span::new(0, 26, 26));
    let e = parse_program("paramters {\n real x;\n}", 0).unwrap_err();
    assert_eq!(
        e,
        SyntaxError::UnknownBlock {
            span: Span::new(0, 0, 9),
            name: "paramters".to_string(),
            suggestion: Some("parameters"),
        }
    );
    let e = parse_program("transformed paramters { }", 0).unwrap_err();
    assert!(
        matches!(
            &e,
            SyntaxError::UnknownBlock {
                suggestion: Some("transformed parameters"),
                ..
            }
        ),
        "{e:?}"
    );
    let e = parse_program("model {\n  x ~ normal(0, 1);\n", 0).unwrap_err();
    assert!(
        matches!(e, SyntaxError::Unclosed { delimiter: '{', open, at_end: true, .. } if open == Span::new(0, 6, 7)),
        "{e:?}"
    );
    let e = parse_program("model { x = ; }", 0).unwrap_err();
    let SyntaxError::Unexpected {
        span,
        expected,
        found,
        ..
    } = e
    else {
        panic!("unexpected-token error expected")
    };
    assert_eq!(span, Span::new(0, 12, 13));
    assert_eq!(found, "`;`");
    assert!(expected.contains(&"an expression"), "{expected:?}");
}

#[test]
fn repl_statements() {
    let stmts = parse_statements("real x = 2;\ny ~ normal(x, 1); print(x);", 4).unwrap();
    assert_eq!(stmts.len(), 3);
    assert!(matches!(&stmts[0].kind, StmtKind::Decl(d) if d.name.name == "x"));
    assert!(matches!(&stmts[1].kind, StmtKind::Tilde { .. }));
    assert_eq!(stmts[1].span, Span::new(4, 12, 29));
    assert!(parse_statements("", 0).unwrap().is_empty());
    let e = parse_statements("x = 1\ny = 2;", 0).unwrap_err();
    assert!(matches!(e, SyntaxError::MissingSemicolon { .. }), "{e:?}");
}

#[test]
fn completeness_of_repl_input() {
    assert!(input_is_complete("x = 1;"));
    assert!(!input_is_complete("model {"));
    assert!(!input_is_complete("f(a,\n b"));
    assert!(input_is_complete("f(a,\n b)"));
    assert!(input_is_complete("x = 1; // {"));
    assert!(input_is_complete("print(\"(\");"));
    assert!(!input_is_complete("x = 1; /* unfinished"));
    assert!(input_is_complete("}"));
}

#[test]
fn edit_distance_values() {
    use crate::syntax::error::edit_distance;
    assert_eq!(edit_distance("paramters", "parameters"), 1);
    assert_eq!(edit_distance("kitten", "sitting"), 3);
    assert_eq!(edit_distance("", "abc"), 3);
}

#[test]
fn nesting_limit() {
    let ok = format!("{}x{}", "(".repeat(100), ")".repeat(100));
    assert_eq!(ex(&ok), "x");
    let deep = format!("{}x{}", "(".repeat(101), ")".repeat(101));
    let e = parse_expression(&deep, 0).unwrap_err();
    assert_eq!(
        e,
        SyntaxError::TooDeeplyNested {
            span: Span::new(0, 100, 101)
        }
    );
}

#[test]
fn operator_chain_limit() {
    for chain in [
        format!("{}x", "-".repeat(1000)),
        format!("x{}", "^x".repeat(1000)),
    ] {
        assert!(parse_expression(&chain, 0).is_ok());
    }
    let e = parse_expression(&format!("{}x", "-".repeat(5000)), 0).unwrap_err();
    assert_eq!(
        e,
        SyntaxError::TooManyOperators {
            span: Span::new(0, 1000, 1001)
        }
    );
    let e = parse_expression(&format!("x{}", "^x".repeat(5000)), 0).unwrap_err();
    assert!(matches!(e, SyntaxError::TooManyOperators { .. }));
    // An earlier syntax error wins over the guard (random text trips it only later on).
    let src = format!("garbage here\nmodel {{ real x = {}1; }}", "-".repeat(5000));
    let e = parse_program(&src, 0).unwrap_err();
    assert!(
        matches!(e, SyntaxError::Unexpected { span, .. } if span.start == 0),
        "{e:?}"
    );
    let src = format!("model {{ real x = {}1; }}", "-".repeat(5000));
    let e = parse_program(&src, 0).unwrap_err();
    assert!(matches!(e, SyntaxError::TooManyOperators { .. }), "{e:?}");
    // a long sum in a valid program, also inside a call
    for body in [
        format!("target += 0{};", " + 1".repeat(1000)),
        format!("target += log(0{});", " + 1".repeat(1000)),
    ] {
        let src = format!("parameters {{ real x; }} model {{ x ~ normal(0, 1); {body} }}");
        let e = parse_program(&src, 0).unwrap_err();
        assert!(matches!(e, SyntaxError::TooManyOperators { .. }), "{e:?}");
    }
    // The count restarts at each statement.
    let many = "x = -1;\n".repeat(2000);
    assert_eq!(
        parse(&format!("model {{ real x; {many} }}")).model.len(),
        2001
    );
}

#[test]
fn byte_order_mark_and_crlf() {
    let p = parse("\u{FEFF}data {\r\n  int N;\r\n}\r\n");
    assert_eq!(p.data.len(), 1);
}

#[test]
fn unterminated_comment_and_string() {
    let e = parse_program("model { /* never closed\n }", 0).unwrap_err();
    assert_eq!(
        e,
        SyntaxError::UnterminatedComment {
            span: Span::new(0, 8, 10)
        }
    );
    let e = parse_program("model { print(\"abc); }", 0).unwrap_err();
    assert_eq!(
        e,
        SyntaxError::UnterminatedString {
            span: Span::new(0, 14, 15)
        }
    );
}

/// User input never panics: every prefix and every one-character deletion of valid programs
/// either parses or gives an error whose diagnostic renders against the source.
#[test]
fn damaged_programs_never_panic() {
    use crate::syntax::report::{ToDiagnostic, render_plain};
    use crate::syntax::source::SourceMap;
    let sources = [
        LABOUR,
        "functions { real f(real x, data vector y) { if (x > 0) return x; else { while (1) break; } return -x^2; } }\n\
             parameters { real<lower=0, upper=1 - a> p; array[2] vector<offset=0, multiplier=2>[3] z; }\n\
             model { for (i in 1:N) y[i, :] ~ normal(x'[2:], s) T[, 1e3]; target += f(.5) ? a : b; print(\"x\", x); }",
    ];
    let mut errors = 0;
    for src in sources {
        let cuts: Vec<usize> = (0..=src.len())
            .filter(|&i| src.is_char_boundary(i))
            .collect();
        let mut variants: Vec<String> = cuts.iter().map(|&i| src[..i].to_string()).collect();
        for w in cuts.windows(2) {
            variants.push(format!("{}{}", &src[..w[0]], &src[w[1]..]));
        }
        for v in variants {
            let mut map = SourceMap::new();
            let file = map.add("m.bayes", v.clone());
            if let Err(e) = parse_program(&v, file) {
                errors += 1;
                let out = render_plain(&map, &e.to_diagnostic());
                assert!(
                    out.contains("m.bayes:"),
                    "diagnostic did not render for {v:?}:\n{out}"
                );
            }
        }
    }
    assert!(
        errors > 500,
        "most damaged programs should fail, got {errors}"
    );
}
