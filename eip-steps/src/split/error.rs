//! What can go wrong in a split.

/// The service behind the splitter failed: not every part was accepted.
#[derive(Debug, thiserror::Error)]
pub enum SplitError<E> {
    /// The service was not ready for the first part.
    #[error("the splitter's service is not ready: {0}")]
    NotReady(#[source] E),
    /// The service failed on a part; the parts before it were accepted (and are sent again
    /// when the original is delivered again).
    #[error("part {sequence_number} of the split was not accepted: {source}")]
    Part {
        /// The part's sequence number, counted from 1.
        sequence_number: u64,
        /// The service's error.
        #[source]
        source: E,
    },
}

impl<E> SplitError<E> {
    /// The service's error.
    pub fn into_inner(self) -> E {
        match self {
            SplitError::NotReady(e) | SplitError::Part { source: e, .. } => e,
        }
    }
}
