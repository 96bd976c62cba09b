//! The splitter's layer.

use tower::Layer;

use super::{Split, SplitService};

/// Puts a [`SplitService`] in front of a service.
#[derive(Debug, Clone)]
pub struct SplitLayer {
    split: Split,
}

impl SplitLayer {
    /// A layer that splits as `split` says.
    pub fn new(split: Split) -> Self {
        SplitLayer { split }
    }
}

impl<S> Layer<S> for SplitLayer {
    type Service = SplitService<S>;

    fn layer(&self, inner: S) -> SplitService<S> {
        SplitService::new(inner, self.split.clone())
    }
}
