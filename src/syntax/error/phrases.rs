//! The phrases of syntax messages: what each grammar rule is called for users, and the
//! summary of what pest expected.

use super::*;

/// The phrase shown to users for a grammar rule they were expected to write. Exhaustive, so
/// that a new grammar rule does not compile until it has a phrase (STYLE.md habit 6).
pub fn describe(rule: Rule) -> &'static str {
    match rule {
        Rule::EOI => "end of file",
        Rule::program => "a program",
        Rule::expression_only => "an expression",
        Rule::statements_only => "statements",
        Rule::include => "`include \"file\";`",
        Rule::functions_block
        | Rule::data_block
        | Rule::tdata_block
        | Rule::params_block
        | Rule::tparams_block
        | Rule::model_block
        | Rule::gq_block => "a block such as `model {`",
        Rule::functions_head => "`functions`",
        Rule::data_head => "`data`",
        Rule::tdata_head => "`transformed data`",
        Rule::params_head => "`parameters`",
        Rule::tparams_head => "`transformed parameters`",
        Rule::model_head => "`model`",
        Rule::gq_head => "`generated quantities`",
        Rule::function_def => "a function definition such as `real f(real x) { … }`",
        Rule::return_type => "a return type (`real`, `vector`, `void`, …)",
        Rule::unsized_type => "a type such as `real` or `array[] int`",
        Rule::array_commas => "`,` or `]`",
        Rule::unsized_base => "a type such as `real` or `vector`",
        Rule::fun_param => "a function argument such as `real x`",
        Rule::data_qualifier => "`data`",
        Rule::var_decl => "a declaration such as `real x;`",
        Rule::annotation => "an annotation such as `@dropout(0.1)`",
        Rule::annotation_name => "an annotation name such as `dropout`",
        Rule::decl_name | Rule::reserved_name => "a variable name",
        Rule::old_dims => "`[`",
        Rule::assign_eq => "`=`",
        Rule::sized_type | Rule::sized_base => "a type such as `real` or `vector[N]`",
        Rule::array_sizes => "`array[…]`",
        Rule::int_type => "`int`",
        Rule::real_type => "`real`",
        Rule::vector_type => "`vector[…]`",
        Rule::row_vector_type => "`row_vector[…]`",
        Rule::matrix_type => "`matrix[…, …]`",
        Rule::simplex_type => "`simplex[…]`",
        Rule::ordered_type => "`ordered[…]`",
        Rule::positive_ordered_type => "`positive_ordered[…]`",
        Rule::cholesky_factor_corr_type => "`cholesky_factor_corr[…]`",
        Rule::cholesky_factor_cov_type => "`cholesky_factor_cov[…]`",
        Rule::cov_matrix_type => "`cov_matrix[…]`",
        Rule::corr_matrix_type => "`corr_matrix[…]`",
        Rule::constraint | Rule::langle => "a constraint such as `<lower=0>`",
        Rule::constraint_item | Rule::constraint_kw => {
            "`lower=`, `upper=`, `offset=` or `multiplier=`"
        }
        Rule::rangle => "`>`",
        Rule::block_stmt
        | Rule::for_stmt
        | Rule::while_stmt
        | Rule::if_stmt
        | Rule::break_stmt
        | Rule::continue_stmt
        | Rule::return_stmt
        | Rule::print_stmt
        | Rule::reject_stmt
        | Rule::target_stmt
        | Rule::assign_stmt
        | Rule::call_stmt
        | Rule::tilde_stmt => "a statement",
        Rule::print_arg => "a string or an expression",
        Rule::plus_assign => "`+=`",
        Rule::lvalue => "a variable name",
        Rule::assign_op => "an assignment such as `=` or `+=`",
        Rule::dist_name => "a distribution name such as `normal`",
        Rule::tilde => "`~`",
        Rule::truncation => "a truncation `T[lower, upper]`",
        Rule::trunc_lower | Rule::trunc_upper => "a truncation bound",
        Rule::expr | Rule::cexpr | Rule::index_upper => "an expression",
        Rule::op_not | Rule::op_neg | Rule::op_plus => "an expression",
        Rule::ternary_op
        | Rule::op_or
        | Rule::op_and
        | Rule::op_eq
        | Rule::op_ne
        | Rule::op_le
        | Rule::op_ge
        | Rule::op_lt
        | Rule::op_gt
        | Rule::op_add
        | Rule::op_sub
        | Rule::op_eltmul
        | Rule::op_eltdiv
        | Rule::op_eltpow
        | Rule::op_mul
        | Rule::op_div
        | Rule::op_intdiv
        | Rule::op_mod
        | Rule::op_ldiv
        | Rule::op_pow
        | Rule::op_transpose => "an operator such as `+`",
        Rule::index_group => "an index `[…]`",
        Rule::index_slot | Rule::index => "an index",
        Rule::range_colon => "`:`",
        Rule::paren_expr => "`(`",
        Rule::row_vector_lit => "a row vector `[…]`",
        Rule::array_lit => "an array `{…}`",
        Rule::call => "a function call",
        Rule::call_args => "function arguments",
        Rule::cond_bar => "`|`",
        Rule::target_call => "`target()`",
        Rule::int_lit => "an integer",
        Rule::real_lit => "a real number",
        Rule::string_lit => "a string in double quotes",
        Rule::string_body => "the text of a string",
        Rule::ident => "a name",
        Rule::semi => "`;`",
        Rule::comma => "`,`",
        Rule::lparen => "`(`",
        Rule::rparen => "`)`",
        Rule::lbracket => "`[`",
        Rule::rbracket => "`]`",
        Rule::lbrace => "`{`",
        Rule::rbrace => "`}`",
        Rule::kw_include => "`include`",
        Rule::kw_functions => "`functions`",
        Rule::kw_data => "`data`",
        Rule::kw_transformed => "`transformed`",
        Rule::kw_parameters => "`parameters`",
        Rule::kw_model => "`model`",
        Rule::kw_generated => "`generated`",
        Rule::kw_quantities => "`quantities`",
        Rule::kw_int => "`int`",
        Rule::kw_real => "`real`",
        Rule::kw_vector => "`vector`",
        Rule::kw_row_vector => "`row_vector`",
        Rule::kw_matrix => "`matrix`",
        Rule::kw_simplex => "`simplex`",
        Rule::kw_ordered => "`ordered`",
        Rule::kw_positive_ordered => "`positive_ordered`",
        Rule::kw_cholesky_factor_corr => "`cholesky_factor_corr`",
        Rule::kw_cholesky_factor_cov => "`cholesky_factor_cov`",
        Rule::kw_cov_matrix => "`cov_matrix`",
        Rule::kw_corr_matrix => "`corr_matrix`",
        Rule::kw_array => "`array`",
        Rule::kw_void => "`void`",
        Rule::kw_lower => "`lower`",
        Rule::kw_upper => "`upper`",
        Rule::kw_offset => "`offset`",
        Rule::kw_multiplier => "`multiplier`",
        Rule::kw_for => "`for`",
        Rule::kw_in => "`in`",
        Rule::kw_while => "`while`",
        Rule::kw_if => "`if`",
        Rule::kw_else => "`else`",
        Rule::kw_break => "`break`",
        Rule::kw_continue => "`continue`",
        Rule::kw_return => "`return`",
        Rule::kw_print => "`print`",
        Rule::kw_reject => "`reject`",
        Rule::kw_target => "`target`",
        Rule::kw_truncate => "a truncation `T[lower, upper]`",
        Rule::WHITESPACE | Rule::COMMENT => "a space or comment",
        // Silent rules never appear in errors; listed so the match stays exhaustive.
        Rule::block => "a block such as `model {`",
        Rule::statement => "a statement",
        Rule::prefix_op | Rule::primary => "an expression",
        Rule::postfix_op | Rule::infix_op | Rule::arith_op => "an operator such as `+`",
        Rule::exponent => "an exponent such as `e-3`",
        Rule::ident_char => "a letter, digit or `_`",
        Rule::reserved => "a reserved word",
    }
}
