//! Writing the remaining hop budget into the `hop-budget` header.
//!
//! Every join a message crosses gives it a new budget, so every store along a chain holds
//! headers of its own: a copy of the map per hop. Most events carry no header but the budget,
//! and for them the map is one of a few made once for the whole process and kept for its life
//! ([`Headers::forever`]): crossing a join copies, frees and counts nothing, and no reference
//! count is shared between cores.

use std::sync::OnceLock;

use crate::message::{Headers, names};

/// Budgets below this have shared budget-only header maps.
const SHARED: u32 = 64;

/// The budget-only maps, by budget.
fn maps() -> &'static [Headers] {
    static BUDGET_ONLY: OnceLock<Vec<Headers>> = OnceLock::new();
    BUDGET_ONLY.get_or_init(|| {
        (0..SHARED)
            .map(|b| Headers::from_iter([(names::HOP_BUDGET, i64::from(b))]).forever())
            .collect()
    })
}

/// Whether `headers` are the shared map holding only `hop-budget: budget`.
pub(super) fn is_shared(headers: &Headers, budget: u32) -> bool {
    budget < SHARED
        && maps()
            .get(budget as usize)
            .is_some_and(|map| map.shares_storage_with(headers))
}

/// Sets the `hop-budget` header to `budget`; `budget_only` if the map holds no other header.
// Inlined into the walk's crossing: a call there would leave the hop being made in memory.
#[inline(always)]
pub(super) fn set(headers: &mut Headers, budget: u32, budget_only: bool) {
    if budget_only
        && budget < SHARED
        && let Some(shared) = maps().get(budget as usize)
    {
        *headers = shared.clone();
        return;
    }
    headers.insert(names::HOP_BUDGET, i64::from(budget));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_only_map_is_shared_and_other_headers_are_kept() {
        let (mut a, mut b) = (Headers::new(), Headers::new());
        set(&mut a, 3, true);
        set(&mut b, 3, true);
        assert!(a.shares_storage_with(&b));
        assert!(is_shared(&a, 3) && !is_shared(&a, 2));
        set(&mut a, 2, true);
        assert_eq!(a.get(names::HOP_BUDGET).and_then(|v| v.as_int()), Some(2));
        assert!(!a.shares_storage_with(&b));

        let mut c = Headers::from_iter([(names::SUBJECT, "x")]);
        set(&mut c, 3, false);
        assert_eq!(c.len(), 2);
        assert_eq!(c.get(names::HOP_BUDGET).and_then(|v| v.as_int()), Some(3));

        let mut big = Headers::new();
        set(&mut big, SHARED + 5, true);
        let expected = i64::from(SHARED + 5);
        assert_eq!(
            big.get(names::HOP_BUDGET).and_then(|v| v.as_int()),
            Some(expected)
        );
    }
}
