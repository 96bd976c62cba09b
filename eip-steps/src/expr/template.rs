//! jq placeholders in templates: `{jq: EXPR}`, a name made by a jq expression over the message.

use std::sync::Arc;

use eip_core::Message;
use eip_core::template::{Computed, PlaceholderKind, TemplateError, scalar};

use super::Jq;

/// The `jq` placeholder kind: `{jq: EXPR}`.
///
/// [`JqPlaceholder`] is the [`PlaceholderKind`] that adds jq to eip's one template language
/// (eip-core knows JSONPath only, and does not depend on jaq): a caller that parses templates
/// hands it to [`Syntax::kinds`](eip_core::template::Syntax::kinds). The expression is compiled
/// once, when the template is parsed; one that does not compile is a [`TemplateError`] at the
/// byte of the template where the expression goes wrong. On each message it must give exactly
/// one output, a string (put in as it is), a number or a boolean; anything else, and every jq
/// error (`error("...")`, a type error), is the message's fault:
/// [`RenderError::Computed`](eip_core::template::RenderError::Computed), which a route treats as
/// an invalid message.
///
/// ```
/// use eip_core::Message;
/// use eip_core::template::{PlaceholderKind, Syntax};
/// use eip_steps::expr::JqPlaceholder;
///
/// let kinds: [&dyn PlaceholderKind; 1] = [&JqPlaceholder];
/// let syntax = Syntax::new().kinds(&kinds);
/// let template = syntax.parse("orders.{jq: .region | ascii_downcase}").unwrap();
/// let msg = Message::new(r#"{"region": "EU"}"#);
/// assert_eq!(template.render(&msg).unwrap(), "orders.eu");
///
/// let err = syntax.parse("orders.{jq: .region | lower}").unwrap_err();
/// assert_eq!(err.offset, 22);
/// assert_eq!(err.reason, "jq: undefined filter `lower/0`");
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct JqPlaceholder;

impl PlaceholderKind for JqPlaceholder {
    fn name(&self) -> &str {
        "jq"
    }

    fn compile(&self, source: &str, offset: usize) -> Result<Arc<dyn Computed>, TemplateError> {
        let lead = source.len() - source.trim_start().len();
        let expression = source.trim();
        if expression.is_empty() {
            return Err(TemplateError {
                offset,
                reason: "`{jq: }` has no expression: write `{jq: .field}`".to_owned(),
            });
        }
        match Jq::compile(expression) {
            Ok(jq) => Ok(Arc::new(JqValue(jq))),
            Err(e) => Err(TemplateError {
                offset: offset + lead + e.offset(),
                reason: format!("jq: {}", e.kind()),
            }),
        }
    }
}

/// A compiled `{jq: EXPR}`.
#[derive(Debug)]
struct JqValue(Jq);

impl Computed for JqValue {
    fn value(&self, msg: &Message) -> Result<String, String> {
        let value = self.0.one(msg).map_err(|e| e.to_string())?;
        scalar(&value).map_err(|what| format!("made {what}, not a string, a number or a boolean"))
    }
}

#[cfg(test)]
mod tests {
    use eip_core::template::{RenderError, Syntax};

    use super::*;

    fn parse(text: &str) -> Result<eip_core::template::Template, TemplateError> {
        let kinds: [&dyn PlaceholderKind; 1] = [&JqPlaceholder];
        Syntax::new().kinds(&kinds).parse(text)
    }

    #[test]
    fn a_jq_placeholder_reads_payload_headers_and_id() {
        let t = parse("{jq: .a}.{jq: $headers.tenant}.{jq: .n + 1}.{jq: .ok}.{jq: {x: 1} | .x}")
            .unwrap();
        let msg = Message::builder(r#"{"a": "x", "n": 1, "ok": true}"#)
            .header("tenant", "acme")
            .build();
        assert_eq!(t.render(&msg).unwrap(), "x.acme.2.true.1");
        let id = parse("{jq: $id}").unwrap();
        assert_eq!(id.render(&msg).unwrap(), msg.id().to_string());
    }

    #[test]
    fn a_jq_error_or_a_value_that_is_no_name_makes_the_message_invalid() {
        let t = parse("{jq: .a}").unwrap();
        for payload in [r#"{"a": [1]}"#, r#"{"a": null}"#, "not json"] {
            let e = t.render(&Message::new(payload)).unwrap_err();
            assert!(e.is_invalid_message(), "{payload}: {e}");
        }
        let e = parse("x.{jq: error(\"no region\")}")
            .unwrap()
            .render(&Message::new("{}"))
            .unwrap_err();
        assert!(
            matches!(&e, RenderError::Computed { reason, .. } if reason.contains("no region")),
            "{e}"
        );
        let several = parse("{jq: .[]}").unwrap();
        assert!(several.render(&Message::new("[1, 2]")).is_err());
    }

    #[test]
    fn a_bad_expression_is_refused_at_its_byte_in_the_template() {
        let e = parse("ab.{jq:  .a | nope}").unwrap_err();
        assert_eq!(e.offset, 14);
        assert!(e.reason.contains("undefined filter `nope/0`"), "{e}");
        assert_eq!(parse("{jq: }").unwrap_err().offset, 4);
        // The whole template's braces count: an unclosed object keeps the placeholder open.
        assert_eq!(parse("a.{jq: {x: .a}").unwrap_err().offset, 2);
    }
}
