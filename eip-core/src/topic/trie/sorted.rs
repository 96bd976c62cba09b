//! Sorting a match's values and dropping repeats, without branches that depend on the values.
//!
//! A match yields a dozen values or so, in no order. An insertion sort of random values takes
//! a branch the processor can not predict about once a value, and each miss costs as much as
//! a few dozen instructions. Up to 16 values of a type without drop glue (ids, indices) are
//! sorted by a fixed sorting network instead (Batcher's odd-even merge sort on 16 places):
//! each comparison picks the smaller and the larger of two places with conditional moves, and
//! the sequence of comparisons is the same whatever the values.
//!
//! The network is cut to the number of values: think of the places past the last value as
//! holding a value larger than all. A comparison never moves the larger of its two places to
//! the lower one, so those places keep that value to the end, and every comparison that
//! reaches one of them changes nothing: it is left out. Twelve values take 42 comparisons
//! where the whole network takes 63, and no place is padded.

/// Sorts `values` and drops repeats, as `sort_unstable` then `dedup` do.
pub(super) fn sort_dedup<T: Ord + Clone>(values: &mut Vec<T>) {
    // Past 16 values, a network's comparisons cost more than the insertion sort's misses save;
    // for values that own memory (whose copies allocate) the standard sort is better.
    if values.len() > 16 || std::mem::needs_drop::<T>() {
        values.sort_unstable();
        values.dedup();
        return;
    }
    sort_network(values);
    values.dedup();
}

/// Sorts at most 16 values with the network cut to their number (more are left as they are).
#[inline(always)]
fn sort_network<T: Ord + Clone>(p: &mut [T]) {
    match p.len() {
        2 => sort_first::<T, 2>(p),
        3 => sort_first::<T, 3>(p),
        4 => sort_first::<T, 4>(p),
        5 => sort_first::<T, 5>(p),
        6 => sort_first::<T, 6>(p),
        7 => sort_first::<T, 7>(p),
        8 => sort_first::<T, 8>(p),
        9 => sort_first::<T, 9>(p),
        10 => sort_first::<T, 10>(p),
        11 => sort_first::<T, 11>(p),
        12 => sort_first::<T, 12>(p),
        13 => sort_first::<T, 13>(p),
        14 => sort_first::<T, 14>(p),
        15 => sort_first::<T, 15>(p),
        16 => sort_first::<T, 16>(p),
        _ => {} // 0 or 1: sorted
    }
}

/// Sorts the `N` places of `p` (which has `N`) with the network cut to `N` places.
#[inline(always)]
fn sort_first<T: Ord + Clone, const N: usize>(p: &mut [T]) {
    if let Ok(places) = <&mut [T; N]>::try_from(p) {
        sort_16_cut(places);
    }
}

/// Puts the smaller of places `i` and `j` (`i < j`) at `i`, the larger at `j`: the copies are
/// picked by a comparison the compiler turns into conditional moves, not a branch. Left out
/// (at compile time) where `j` is past the places there are.
#[inline(always)]
fn exchange<T: Ord + Clone, const W: usize>(places: &mut [T; W], i: usize, j: usize) {
    if j >= W {
        return;
    }
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

/// Sorts the 8 places from `at` on (those of them there are).
#[inline(always)]
fn sort_8_at<T: Ord + Clone, const W: usize>(p: &mut [T; W], at: usize) {
    network!(p, at;
        (0, 1), (2, 3), (0, 2), (1, 3), (1, 2), (4, 5), (6, 7), (4, 6), (5, 7), (5, 6),
        (0, 4), (2, 6), (2, 4), (1, 5), (3, 7), (3, 5), (1, 2), (3, 4), (5, 6),
    );
}

/// Sorts up to 16 places: the first 8 on their own, then (with more than 8) the rest, and
/// the two halves merged.
#[inline(always)]
fn sort_16_cut<T: Ord + Clone, const W: usize>(p: &mut [T; W]) {
    sort_8_at(p, 0);
    if W <= 8 {
        return;
    }
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
        // By the 0-1 principle, a network that sorts every sequence of 0s and 1s sorts all:
        // the network cut to each number of places from 2 to 16.
        for n in 2..=16 {
            for bits in 0..1_u32 << n {
                let mut p: Vec<u8> = (0..n).map(|i| (bits >> i) as u8 & 1).collect();
                let mut want = p.clone();
                want.sort_unstable();
                sort_network(&mut p);
                assert_eq!(p, want, "{n} places: {bits:0n$b}");
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
