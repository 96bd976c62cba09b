//! Text in the picture: how wide it is roughly, cut to a length, and escaped for XML.

/// Roughly how wide `s` is at `size` pixels in a sans-serif font.
pub(super) fn text_width(s: &str, size: f64) -> f64 {
    s.chars()
        .map(|c| match c {
            'i' | 'j' | 'l' | '.' | ',' | ':' | ';' | '|' | '\'' | '!' | ' ' => 0.32,
            'm' | 'w' | 'M' | 'W' | '@' | '%' => 0.85,
            c if c.is_ascii_uppercase() || c == '#' || c == '&' => 0.68,
            c if c.is_ascii() => 0.56,
            c if is_wide(c) => 1.0,
            _ => 0.62,
        })
        .sum::<f64>()
        * size
}

/// East Asian wide characters and emoji, which take about a square each.
fn is_wide(c: char) -> bool {
    matches!(u32::from(c),
        0x1100..=0x115F
        | 0x2E80..=0xA4CF
        | 0xAC00..=0xD7A3
        | 0xF900..=0xFAFF
        | 0xFE30..=0xFE4F
        | 0xFF00..=0xFF60
        | 0xFFE0..=0xFFE6
        | 0x1F300..=0x1FAFF
        | 0x20000..=0x3FFFD)
}

/// `s` cut to `max` characters, an ellipsis marking the cut.
pub(super) fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// `s` as XML text or attribute content: markup characters as entities, and characters XML
/// 1.0 does not allow (control characters, U+FFFE, U+FFFF) replaced.
pub(super) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if c.is_control() => out.push(' '),
            '\u{FFFE}' | '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::svg::FONT;

    #[test]
    fn markup_characters_become_entities() {
        assert_eq!(escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&apos;");
    }

    #[test]
    fn characters_xml_forbids_are_replaced() {
        assert_eq!(escape("a\u{0}b\u{FFFF}"), "a b\u{FFFD}");
    }

    #[test]
    fn long_names_are_cut_with_an_ellipsis() {
        assert_eq!(shorten("abcdef", 4), "abc…");
        assert_eq!(shorten("abc", 4), "abc");
    }

    #[test]
    fn wide_characters_measure_wider() {
        assert!(text_width("注文", FONT) > text_width("ab", FONT));
    }
}
