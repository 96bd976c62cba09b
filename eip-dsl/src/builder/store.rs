//! The durable store: [`embedded`], where durable channels keep their messages.
//!
//! Each method sets the key of the same name under the flow file's `store:` (`path`,
//! `max-bytes`). Nothing is checked here: an empty path or a cap of 0 bytes is reported by
//! validation, exactly as it would be for a file. A flow with no
//! [durable](super::ChannelBuilder::durable) channel may have a store; it is then unused.
//!
//! ```
//! use eip_dsl::builder::{FlowBuilder, channel, store};
//!
//! // store: {path: data, max-bytes: 512 MiB}
//! let flow = FlowBuilder::new()
//!     .channel("payments", channel::point_to_point().durable())
//!     .store(store::embedded().path("data").max_bytes(512 * 1024 * 1024));
//! let plan = flow.plan("/srv/flows")?;
//! assert_eq!(plan.store.path.as_deref(), Some("/srv/flows/data".as_ref()));
//! assert_eq!(plan.store.max_bytes, Some(536_870_912));
//! # Ok::<(), eip_dsl::diagnostic::FlowErrors>(())
//! ```

use crate::spec::{Located, StoreSpec};
use crate::validate::BYTE_UNITS;

/// The embedded durable store (`store:`), every key left to its default.
pub fn embedded() -> StoreBuilder {
    StoreBuilder::default()
}

/// The `store:` of a flow. Made by [`embedded`]; added with
/// [`FlowBuilder::store`](super::FlowBuilder::store).
#[derive(Debug, Clone, Default, PartialEq)]
#[must_use]
pub struct StoreBuilder {
    spec: StoreSpec,
}

impl StoreBuilder {
    /// `path:` the data directory, relative to the base directory given to
    /// [`FlowBuilder::plan`](super::FlowBuilder::plan) (as a flow file's is relative to the
    /// file's directory).
    pub fn path(mut self, directory: impl Into<String>) -> Self {
        self.spec.path = Some(Located::new(directory.into()));
        self
    }

    /// `max-bytes:` the disk cap, in bytes (at least 1); see [`byte_size_text`] for how it is
    /// written.
    pub fn max_bytes(mut self, bytes: u64) -> Self {
        self.spec.max_bytes = Some(Located::new(byte_size_text(bytes)));
        self
    }

    /// The store as plain data.
    pub fn into_spec(self) -> StoreSpec {
        self.spec
    }
}

/// A size as a flow file writes it: a whole number in the largest unit that holds it exactly
/// (`512 MiB`, `10 MB`), or a bare number of bytes when no unit does.
///
/// ```
/// use eip_dsl::builder::store::byte_size_text;
///
/// assert_eq!(byte_size_text(512 * 1024 * 1024), "512 MiB");
/// assert_eq!(byte_size_text(10_000_000), "10 MB");
/// assert_eq!(byte_size_text(4096), "4 KiB");
/// assert_eq!(byte_size_text(1500), "1500");
/// ```
pub fn byte_size_text(bytes: u64) -> String {
    let unit = BYTE_UNITS
        .iter()
        .filter(|(_, per_unit)| bytes != 0 && bytes.is_multiple_of(*per_unit))
        .max_by_key(|(_, per_unit)| *per_unit);
    match unit {
        Some((unit, per_unit)) if *per_unit > 1 => format!("{} {unit}", bytes / per_unit),
        _ => bytes.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::parse_byte_size;

    #[test]
    fn sizes_take_the_largest_exact_unit() {
        assert_eq!(byte_size_text(1 << 40), "1 TiB");
        assert_eq!(byte_size_text(3 * (1 << 30)), "3 GiB");
        assert_eq!(byte_size_text(2_000_000_000_000), "2 TB");
        assert_eq!(byte_size_text(1_024_000), "1000 KiB");
        assert_eq!(byte_size_text(1000), "1 kB");
        assert_eq!(byte_size_text(1), "1");
        assert_eq!(byte_size_text(0), "0");
    }

    #[test]
    fn every_size_reads_back_as_itself() {
        for bytes in [
            1,
            999,
            1000,
            1024,
            1536,
            1_500_000_000,
            1 << 40,
            u64::MAX,
            u64::MAX - 1,
        ] {
            let text = byte_size_text(bytes);
            assert_eq!(parse_byte_size(&text), Ok(bytes), "{text}");
        }
    }
}
