//! jq expressions.
