//! Channel joins. Arrive with the routing issue.
