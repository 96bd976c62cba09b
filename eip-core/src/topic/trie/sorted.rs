//! Sorting a match's values and dropping repeats, without branches that depend on the values.
//!
//! A match yields a dozen values or so, in no order. An insertion sort of random values takes
//! a branch the processor can not predict about once a value, and each miss costs as much as
//! a few dozen instructions. Up to 16 values of a type without drop glue (ids, indices) are
//! sorted by a fixed sorting network instead (Batcher's odd-even merge sort on 8 or 16
//! places): each comparison picks the smaller and the larger of two places with conditional
//! moves, and the sequence of comparisons is the same whatever the values.

/// Sorts `values` and drops repeats, as `sort_unstable` then `dedup` do.
pub(super) fn sort_dedup<T: Ord + Clone>(values: &mut Vec<T>) {
    let n = values.len();
    if n < 2 {
        return;
    }
    // A network compares every pair it names, padding included, and copies values to move
    // them: for values that own memory (whose copies allocate) the standard sort is better;
    // past 16 values, a network's comparisons cost more than the insertion sort's misses save.
    if n > 16 || std::mem::needs_drop::<T>() {
        values.sort_unstable();
        values.dedup();
        return;
    }
    // Padded with copies of the largest value to 8 or 16 places: the network leaves them past
    // the first `n` (it never moves a larger value to a lower place).
    let Some(largest) = values.iter().max().cloned() else {
        return;
    };
    if n <= 8 {
        values.resize(8, largest);
        if let Ok(places) = <&mut [T; 8]>::try_from(values.as_mut_slice()) {
            sort_8(places);
        }
    } else {
        values.resize(16, largest);
        if let Ok(places) = <&mut [T; 16]>::try_from(values.as_mut_slice()) {
            sort_16(places);
        }
    }
    values.truncate(n);
    values.dedup();
}

/// Puts the smaller of places `i` and `j` (`i < j`) at `i`, the larger at `j`: the copies are
/// picked by a comparison the compiler turns into conditional moves, not a branch.
#[inline(always)]
fn exchange<T: Ord + Clone, const W: usize>(places: &mut [T; W], i: usize, j: usize) {
    let (a, b) = (&places[i], &places[j]);
    let (low, high) = match b < a {
        true => (b.clone(), a.clone()),
        false => (a.clone(), b.clone()),
    };
    places[i] = low;
    places[j] = high;
}

/// The exchanges of a network over the places from `$at` on.
macro_rules! network {
    ($places:ident, $at:expr; $(($i:literal, $j:literal)),* $(,)?) => {
        $(exchange($places, $at + $i, $at + $j);)*
    };
}

/// Sorts the 8 places from `at` on.
#[inline(always)]
fn sort_8_at<T: Ord + Clone, const W: usize>(p: &mut [T; W], at: usize) {
    network!(p, at;
        (0, 1), (2, 3), (0, 2), (1, 3), (1, 2), (4, 5), (6, 7), (4, 6), (5, 7), (5, 6),
        (0, 4), (2, 6), (2, 4), (1, 5), (3, 7), (3, 5), (1, 2), (3, 4), (5, 6),
    );
}

#[inline(always)]
fn sort_8<T: Ord + Clone>(p: &mut [T; 8]) {
    sort_8_at(p, 0);
}

#[inline(always)]
fn sort_16<T: Ord + Clone>(p: &mut [T; 16]) {
    // Each half on its own, then the two merged.
    sort_8_at(p, 0);
    sort_8_at(p, 8);
    network!(p, 0;
        (0, 8), (4, 12), (4, 8), (2, 10), (6, 14), (6, 10), (2, 4), (6, 8), (10, 12), (1, 9),
        (5, 13), (5, 9), (3, 11), (7, 15), (7, 11), (3, 5), (7, 9), (11, 13), (1, 2), (3, 4),
        (5, 6), (7, 8), (9, 10), (11, 12), (13, 14),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_networks_sort_every_input_of_zeros_and_ones() {
        // By the 0-1 principle, a network that sorts every sequence of 0s and 1s sorts all.
        for bits in 0..1_u32 << 16 {
            let mut p: [u8; 16] = std::array::from_fn(|i| (bits >> i) as u8 & 1);
            let mut want = p;
            want.sort_unstable();
            sort_16(&mut p);
            assert_eq!(p, want, "{bits:016b}");
            if bits < 1 << 8 {
                let mut p: [u8; 8] = std::array::from_fn(|i| (bits >> i) as u8 & 1);
                let mut want = p;
                want.sort_unstable();
                sort_8(&mut p);
                assert_eq!(p, want, "{bits:08b}");
            }
        }
    }

    #[test]
    fn the_largest_and_the_smallest_find_their_place_from_anywhere() {
        for n in 2..=24 {
            for at in 0..n {
                let mut v = vec![0_u32; n];
                v[at] = 36;
                sort_dedup(&mut v);
                assert_eq!(v, [0, 36], "{n} values, the largest at {at}");
                let mut v = vec![36_u32; n];
                v[at] = 0;
                sort_dedup(&mut v);
                assert_eq!(v, [0, 36], "{n} values, the smallest at {at}");
            }
        }
    }

    #[test]
    fn values_that_own_memory_are_sorted_too() {
        let mut v: Vec<String> = ["b", "a", "c", "a"].map(String::from).into();
        sort_dedup(&mut v);
        assert_eq!(v, ["a", "b", "c"]);
    }

    proptest! {
        /// Any values, few or many, repeated or not: the same as the standard sort and dedup.
        #[test]
        fn sorts_and_drops_repeats_as_the_standard_sort(
            values in proptest::collection::vec(0..40u32, 0..70),
        ) {
            let mut want = values.clone();
            want.sort_unstable();
            want.dedup();
            let mut got = values;
            sort_dedup(&mut got);
            prop_assert_eq!(got, want);
        }
    }
}
