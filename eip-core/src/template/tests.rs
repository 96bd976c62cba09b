use std::sync::Arc;

use super::*;

fn msg(payload: &str) -> Message {
    Message::builder(payload.to_owned())
        .subject("stock.ibm")
        .header("region", "eu")
        .header("raw", bytes::Bytes::from_static(b"\x01"))
        .build()
}

#[test]
fn every_placeholder_is_filled_in() {
    let m = msg(r#"{"a": {"b": "x"}, "n": 7, "ok": true}"#);
    let t = Template::parse("{subject}/{header.region}/{$.a.b}/{$.n}/{ $.ok }/{{x}}").unwrap();
    assert_eq!(t.render(&m).unwrap(), "stock.ibm/eu/x/7/true/{x}");
    let id = Template::parse("{id}").unwrap();
    assert_eq!(id.render(&m).unwrap(), m.id().to_string());
    assert!(Template::parse("plain.name").unwrap().is_fixed());
    assert!(!t.is_fixed());
}

#[test]
fn a_bad_template_says_where() {
    let e = Template::parse("a.{nope}").unwrap_err();
    assert_eq!(e.offset, 3);
    assert!(e.reason.contains("unknown placeholder `{nope}`"), "{e}");
    assert_eq!(Template::parse("a.{subject").unwrap_err().offset, 2);
    assert_eq!(Template::parse("a}").unwrap_err().offset, 1);
    assert_eq!(Template::parse("x{header.}").unwrap_err().offset, 2);
    // An unclosed bracket keeps the placeholder open.
    assert_eq!(Template::parse("x.{$.a[}").unwrap_err().offset, 2);
    let e = Template::parse("x.{$.a..}").unwrap_err();
    assert!(e.offset >= 3 && e.reason.contains("JSONPath"), "{e:?}");
    // A `}` inside a quoted JSONPath name does not close the placeholder.
    let t = Template::parse("{$['a}b']}").unwrap();
    assert_eq!(t.render(&Message::new(r#"{"a}b": "y"}"#)).unwrap(), "y");
    // A brace opened inside a placeholder keeps it open.
    assert_eq!(
        Template::parse("a.{header.x.{subject}").unwrap_err().offset,
        2
    );
}

#[test]
fn a_message_that_can_not_fill_it_in_says_why() {
    let render = |t: &str, m: &Message| Template::parse(t).unwrap().render(m).unwrap_err();
    let m = msg(r#"{"list": [1], "none": null}"#);
    assert_eq!(
        render("{header.gone}", &m),
        RenderError::NoHeader("gone".into())
    );
    assert_eq!(
        render("{header.raw}", &m),
        RenderError::BytesHeader("raw".into())
    );
    assert_eq!(
        render("{$.x}", &m),
        RenderError::NothingSelected("$.x".into())
    );
    assert_eq!(
        render("{$.list}", &m),
        RenderError::NotScalar("$.list".into(), "an array")
    );
    assert_eq!(
        render("{$.none}", &m),
        RenderError::NotScalar("$.none".into(), "null")
    );
    assert!(matches!(
        render("{$.x}", &Message::new("not json")),
        RenderError::NotJson(..)
    ));
    assert_eq!(
        render("{subject}", &Message::new("")),
        RenderError::NoSubject
    );
    assert!(!RenderError::NoSubject.is_invalid_message());
}

#[test]
fn declared_names_are_filled_by_the_caller_and_refused_elsewhere() {
    let names = ["seq", "yyyy"];
    let t = Syntax::new().names(&names).parse("{yyyy}/{seq}").unwrap();
    let filled = t.render_each(
        &msg("{}"),
        |i| Some(["7", "2024"][i].to_owned()),
        |out: &mut String, p: Placeholder<'_>, v: &str| {
            out.push_str(&format!("{p}={v}"));
            Ok::<_, RenderError>(())
        },
    );
    assert_eq!(filled.unwrap(), "{yyyy}=2024/{seq}=7");
    assert_eq!(
        t.render(&msg("{}")).unwrap_err(),
        RenderError::Unfilled("yyyy".into())
    );
    assert!(Template::parse("{seq}").is_err());
    // A declared name can not take the place of one every template has.
    let t = Syntax::new().names(&["id"]).parse("{id}").unwrap();
    assert_eq!(t.placeholders().collect::<Vec<_>>(), [Placeholder::Id]);
}

#[test]
fn a_value_check_sees_each_placeholder_and_can_refuse_it() {
    let t = Template::parse("a.{header.region}.{subject}").unwrap();
    let refused = t.render_each(
        &msg("{}"),
        |_| None,
        |out: &mut String, p, v: &str| match p {
            Placeholder::Subject if v.contains('.') => Err(RenderError::NoSubject),
            _ => {
                out.push_str(v);
                Ok(())
            }
        },
    );
    assert_eq!(refused, Err(RenderError::NoSubject));
    assert_eq!(t.literal_text().collect::<Vec<_>>(), ["a.", "."]);
    assert_eq!(t.sample("x"), "a.x.x");
    assert!(Template::parse("{subject}").unwrap().is_subject_alone());
    assert!(!t.is_subject_alone());
}

#[test]
fn text_braces_leave_json_as_written() {
    let t = Syntax::new()
        .names(&["seq"])
        .text_braces()
        .parse(r#"{"seq": {seq}, "x": {}, "y": "}{{"}"#)
        .unwrap();
    let made = t.render_each(
        &msg(""),
        |_| Some("3".into()),
        |out: &mut String, _, v: &str| {
            out.push_str(v);
            Ok::<_, RenderError>(())
        },
    );
    assert_eq!(made.unwrap(), r#"{"seq": 3, "x": {}, "y": "}{{"}"#);
    let e = Syntax::new().text_braces().parse("n={sqe}").unwrap_err();
    assert_eq!(e.offset, 3);
    assert!(e.reason.contains("unknown placeholder `{sqe}`"), "{e}");
}

/// `{up: header}`: a header's value in capitals, or an error naming it.
struct Upper;

#[derive(Debug)]
struct UpperHeader(String);

impl PlaceholderKind for Upper {
    fn name(&self) -> &str {
        "up"
    }

    fn compile(&self, source: &str, offset: usize) -> Result<Arc<dyn Computed>, TemplateError> {
        let name = source.trim();
        if name.is_empty() {
            return Err(TemplateError {
                offset,
                reason: "names no header".into(),
            });
        }
        Ok(Arc::new(UpperHeader(name.to_owned())))
    }
}

impl Computed for UpperHeader {
    fn value(&self, msg: &Message) -> Result<String, String> {
        match msg.headers().get(&self.0) {
            Some(HeaderValue::Str(s)) => Ok(s.to_uppercase()),
            _ => Err(format!("no text header `{}`", self.0)),
        }
    }
}

#[test]
fn a_kind_of_the_caller_compiles_once_and_its_errors_say_where() {
    let kinds: [&dyn PlaceholderKind; 1] = [&Upper];
    let syntax = Syntax::new().kinds(&kinds);
    let t = syntax.parse("to.{ up: region }").unwrap();
    assert_eq!(t.render(&msg("")).unwrap(), "to.EU");
    let e = t.render(&Message::new("")).unwrap_err();
    assert_eq!(
        e,
        RenderError::Computed {
            placeholder: "up: region".into(),
            reason: "no text header `region`".into()
        }
    );
    assert!(e.is_invalid_message());
    // The offset is the kind's, moved to where its source starts in the template.
    assert_eq!(syntax.parse("ab{up:}").unwrap_err().offset, 6);
    let e = syntax.parse("{xq: .a}").unwrap_err();
    assert_eq!(e.offset, 1);
    assert!(e.reason.contains("no placeholder kind `xq:`"), "{e}");
    assert!(e.reason.contains("`{up: ...}`"), "{e}");
    // Without the kind, the same text is refused, not sent as written.
    assert!(Template::parse("to.{up: region}").is_err());
    // A brace inside a kind's source does not close the placeholder.
    let t = syntax.parse("{up: {x}}").unwrap();
    assert_eq!(
        t.placeholders().collect::<Vec<_>>(),
        [Placeholder::Computed("up: {x}")]
    );
}
