//! Placeholder kinds a caller adds: `{KIND: SOURCE}`, compiled once when the template is
//! parsed.

use std::fmt;
use std::sync::Arc;

use super::TemplateError;
use crate::message::Message;

/// A kind of placeholder, written `{NAME: SOURCE}`.
///
/// eip-core knows no expression language beyond JSONPath; a crate that has one (eip-steps has
/// jq) implements [`PlaceholderKind`] and hands it to [`Syntax::kinds`](super::Syntax::kinds).
/// The parser gives the kind what is written after `KIND:` and the byte where that starts, so
/// an error the kind reports points into the template; the [`Computed`] it makes is run on each
/// message and answers the placeholder's text or why there is none.
///
/// ```
/// use std::sync::Arc;
/// use eip_core::Message;
/// use eip_core::template::{Computed, PlaceholderKind, Syntax, TemplateError};
///
/// /// `{len: }`: the payload's length in bytes.
/// struct Len;
/// #[derive(Debug)]
/// struct PayloadLen;
/// impl PlaceholderKind for Len {
///     fn name(&self) -> &str { "len" }
///     fn compile(&self, source: &str, offset: usize) -> Result<Arc<dyn Computed>, TemplateError> {
///         match source.trim() {
///             "" => Ok(Arc::new(PayloadLen)),
///             _ => Err(TemplateError { offset, reason: "`len:` takes nothing".into() }),
///         }
///     }
/// }
/// impl Computed for PayloadLen {
///     fn value(&self, msg: &Message) -> Result<String, String> {
///         Ok(msg.payload().len().to_string())
///     }
/// }
///
/// let kinds: [&dyn PlaceholderKind; 1] = [&Len];
/// let template = Syntax::new().kinds(&kinds).parse("size.{len:}").unwrap();
/// assert_eq!(template.render(&Message::new("abc")).unwrap(), "size.3");
/// assert_eq!(Syntax::new().kinds(&kinds).parse("{len: x}").unwrap_err().offset, 5);
/// ```
pub trait PlaceholderKind: Send + Sync {
    /// The word before the colon (`jq`).
    fn name(&self) -> &str;

    /// Compiles `source` (what follows the colon, up to the closing brace, as written), which
    /// starts at byte `offset` of the template: an error's offset is one into the template.
    fn compile(&self, source: &str, offset: usize) -> Result<Arc<dyn Computed>, TemplateError>;
}

/// A compiled placeholder of a caller's kind.
pub trait Computed: Send + Sync + fmt::Debug {
    /// The text `msg` puts in its place, or why it puts none (the reason becomes
    /// [`RenderError::Computed`](super::RenderError::Computed)).
    fn value(&self, msg: &Message) -> Result<String, String>;
}
