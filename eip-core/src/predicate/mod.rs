//! Predicates over messages (JSONPath, headers, subject). Arrives with the routing issue.
