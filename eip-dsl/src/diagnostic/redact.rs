//! Secrets in a flow file's text, found so that no diagnostic shows them.
//!
//! A problem is shown with the lines around it, and a problem is most likely exactly where a
//! secret was written by mistake: a misspelt `url:` key, a password given as a key of its own.
//! So the text kept for snippets is a copy in which every secret is overwritten with `*`, one
//! for each byte: every position (byte offset, line) of every problem still points at the same
//! place, and the rest of the line stays readable. What counts as a secret, wherever it is
//! written (any key, since a misspelt key is the usual case, quoted or not):
//!
//! - the password of a URL's user info, `scheme://user:PASSWORD@host`;
//! - the value of a `NAME=VALUE` pair whose name is a secret's, such as a URL's
//!   `?password=VALUE` or a connection string's `password=VALUE`;
//! - the value of a YAML key whose name is a secret's (`password: VALUE`, `api-token: VALUE`),
//!   including a value written on the lines below the key.
//!
//! A name is a secret's when its last word is `password`, `secret`, `token` and the like
//! (`db-password`, `apiToken`), or it ends in `api-key`, `private-key`...; a name ending in
//! `-env` (`password-env`) names an environment variable and is not one. A reference to an
//! environment variable, `${NAME}` or `${NAME:-default}`, is how a flow is meant to name a
//! secret, so it is kept as written. The texts of a problem (which may quote a value) have
//! `***` in place of each secret found at the problem's places, and of each URL password
//! that is one of the file's secrets.

use std::collections::HashSet;
use std::ops::Range;

/// The secrets found in a flow file's text.
#[derive(Debug, Default)]
pub(crate) struct Secrets {
    /// Byte ranges of the text, sorted, not overlapping, on character boundaries, each with
    /// the secret it holds.
    found: Vec<(Range<usize>, String)>,
    /// The secrets' texts.
    words: HashSet<String>,
}

/// The last words that make a name a secret's.
const SECRET_WORDS: &[&str] = &[
    "password",
    "passwd",
    "pwd",
    "pass",
    "passphrase",
    "secret",
    "token",
    "apikey",
    "credential",
    "credentials",
];

/// The last two words that make a name a secret's.
const SECRET_PAIRS: &[(&str, &str)] = &[
    ("api", "key"),
    ("private", "key"),
    ("secret", "key"),
    ("access", "key"),
];

impl Secrets {
    /// Every secret in `text`.
    pub(crate) fn find(text: &str) -> Secrets {
        let mut ranges = Vec::new();
        for line in lines(text) {
            url_passwords(text, line.clone(), &mut ranges);
            secret_pairs(text, line.clone(), &mut ranges);
        }
        secret_keys(text, &mut ranges);
        let found: Vec<(Range<usize>, String)> = merged(text, ranges)
            .into_iter()
            .filter_map(|r| Some((r.clone(), text.get(r)?.to_owned())))
            .collect();
        let words = found.iter().map(|(_, w)| w.clone()).collect();
        Secrets { found, words }
    }

    /// `text` (the text the secrets were found in) with each byte of each secret replaced
    /// by `*`: the same length, so every offset into it still holds.
    pub(crate) fn hide_in(&self, text: &str) -> String {
        let mut bytes = text.as_bytes().to_vec();
        for (range, _) in &self.found {
            if let Some(secret) = bytes.get_mut(range.clone()) {
                secret.fill(b'*');
            }
        }
        // The ranges lie on character boundaries, so this can not fail; should it, the
        // whole text is hidden rather than any of it shown.
        String::from_utf8(bytes).unwrap_or_else(|e| "*".repeat(e.as_bytes().len()))
    }

    /// `message`, about the places `spans` of the file, with its secrets replaced by `***`:
    /// a URL's password that is one of the file's secrets, and any secret found at those
    /// places (a message quotes what is there). A secret of one or two characters is
    /// replaced only as a URL's password, lest every such letter of the message go.
    pub(crate) fn scrub(&self, message: &str, spans: &[Range<usize>]) -> String {
        let mut out = message.to_owned();
        let mut in_urls = Vec::new();
        for line in lines(message) {
            url_passwords(message, line, &mut in_urls);
        }
        for range in merged(message, in_urls).iter().rev() {
            if message
                .get(range.clone())
                .is_some_and(|s| self.words.contains(s))
            {
                out.replace_range(range.clone(), "***");
            }
        }
        for word in spans.iter().flat_map(|span| self.within(span.clone())) {
            if word.len() >= 3 {
                out = out.replace(word, "***");
            }
        }
        out
    }

    /// The secrets that overlap `span` of the file (an empty span: the byte it starts at).
    fn within(&self, span: Range<usize>) -> impl Iterator<Item = &str> {
        let end = span.end.max(span.start + 1);
        let first = self.found.partition_point(|(r, _)| r.end <= span.start);
        self.found[first..]
            .iter()
            .take_while(move |(r, _)| r.start < end)
            .map(|(_, w)| w.as_str())
    }
}

/// Whether `name` (a key, a query parameter) is a secret's name.
pub(crate) fn is_secret_name(name: &str) -> bool {
    let words = words_of(name);
    match words.as_slice() {
        [.., last] if last == "env" => false,
        [.., before, last] if SECRET_PAIRS.contains(&(before.as_str(), last.as_str())) => true,
        [.., last] => {
            SECRET_WORDS.contains(&last.as_str())
                || ["password", "passwd", "secret", "token"]
                    .iter()
                    .any(|w| last.ends_with(w))
        }
        [] => false,
    }
}

/// `name` in lower-case words, split at `-`, `_`, `.` and camel-case humps.
fn words_of(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut lower_before = false;
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.' | ' ') {
            words.push(std::mem::take(&mut word));
            lower_before = false;
            continue;
        }
        if c.is_uppercase() && lower_before {
            words.push(std::mem::take(&mut word));
        }
        lower_before = c.is_lowercase() || c.is_ascii_digit();
        word.extend(c.to_lowercase());
    }
    words.push(word);
    words.retain(|w| !w.is_empty());
    words
}

/// The byte range of each line of `text`, without its line break.
fn lines(text: &str) -> impl Iterator<Item = Range<usize>> + '_ {
    let mut start = 0;
    text.split('\n').map(move |line| {
        let range = start..start + line.trim_end_matches('\r').len();
        start += line.len() + 1;
        range
    })
}

/// The passwords of the URLs on `line`: after the first `://`, the user info runs to the
/// last `@` of the line (a password may hold any character, so the widest reading is
/// taken), and the password from its first `:` outside a `${...}`. A later URL's password
/// lies inside that one, so one look per line finds them all.
fn url_passwords(text: &str, line: Range<usize>, out: &mut Vec<Range<usize>>) {
    let Some(bytes) = text.as_bytes().get(line.clone()) else {
        return;
    };
    let Some(start) = find(bytes, 0, b"://").map(|found| found + 3) else {
        return;
    };
    let Some(at) = bytes
        .iter()
        .rposition(|&b| b == b'@')
        .filter(|&at| at >= start)
    else {
        return;
    };
    if let Some(colon) = top_level_colon(&bytes[start..at]) {
        literal_parts(bytes, start + colon + 1..at, line.start, out);
    }
}

/// The values of the `NAME=VALUE` pairs on `line` whose name is a secret's; the value runs to
/// the next `&`, `;` or blank. `==` and `=~` compare, they do not assign.
fn secret_pairs(text: &str, line: Range<usize>, out: &mut Vec<Range<usize>>) {
    let Some(bytes) = text.as_bytes().get(line.clone()) else {
        return;
    };
    // Past a value already hidden, nothing needs looking at again: one pass per line.
    let mut hidden_to = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let next = bytes.get(i + 1).copied();
        let before = i.checked_sub(1).and_then(|j| bytes.get(j)).copied();
        if b != b'='
            || i < hidden_to
            || matches!(next, Some(b'=' | b'~'))
            || matches!(before, Some(b'=' | b'!'))
        {
            continue;
        }
        let name_start = bytes[..i]
            .iter()
            .rposition(|&c| !is_name_byte(c))
            .map_or(0, |p| p + 1);
        let name = String::from_utf8_lossy(&bytes[name_start..i]);
        if name.is_empty() || !is_secret_name(&name) {
            continue;
        }
        let end = bytes[i + 1..]
            .iter()
            .position(|&c| matches!(c, b'&' | b';') || c.is_ascii_whitespace())
            .map_or(bytes.len(), |p| i + 1 + p);
        literal_parts(bytes, i + 1..end, line.start, out);
        hidden_to = end;
    }
}

/// The values of YAML keys named like secrets: the rest of the key's line, or, when that is
/// empty, a comment or a block scalar's `|`/`>`, the more indented lines below it.
fn secret_keys(text: &str, out: &mut Vec<Range<usize>>) {
    let all: Vec<Range<usize>> = lines(text).collect();
    let bytes = text.as_bytes();
    // The lines of a value already hidden are not looked at again: one pass over the text.
    let mut hidden_to_line = 0;
    for (n, line) in all.iter().enumerate() {
        let Some(row) = bytes.get(line.clone()).filter(|_| n >= hidden_to_line) else {
            continue;
        };
        for (i, &b) in row.iter().enumerate() {
            let after = row.get(i + 1).copied();
            if b != b':' || after.is_some_and(|c| !c.is_ascii_whitespace()) {
                continue;
            }
            if !key_before(row, i).is_some_and(|name| is_secret_name(&name)) {
                continue;
            }
            let value_start = row[i + 1..]
                .iter()
                .position(|c| !c.is_ascii_whitespace())
                .map_or(row.len(), |p| i + 1 + p);
            let value = &row[value_start..];
            if value.is_empty() || value[0] == b'#' || is_block_indicator(value) {
                hidden_to_line = hide_block_below(text, &all, n, out);
            } else {
                literal_parts(row, value_start..row.len(), line.start, out);
            }
            // The rest of the line is hidden or ends the key's line: nothing more on it.
            break;
        }
    }
}

/// The key that ends at the `:` at `colon` of `row`, if that is where a key ends: a name
/// (possibly quoted) after the line's indentation, `- `, `{`, `[` or `,`.
fn key_before(row: &[u8], colon: usize) -> Option<String> {
    let mut end = colon;
    let quote = end
        .checked_sub(1)
        .and_then(|j| row.get(j))
        .filter(|&&c| c == b'"' || c == b'\'')
        .copied();
    let start = match quote {
        Some(q) => {
            end -= 1;
            row[..end].iter().rposition(|&c| c == q)? + 1
        }
        None => row[..end]
            .iter()
            .rposition(|&c| !is_name_byte(c))
            .map_or(0, |p| p + 1),
    };
    let lead = if quote.is_some() { start - 1 } else { start };
    let before = lead.checked_sub(1).and_then(|j| row.get(j)).copied();
    let starts_key = match before {
        None => true,
        Some(c) => c.is_ascii_whitespace() || matches!(c, b'{' | b'[' | b','),
    };
    (starts_key && start < end).then(|| String::from_utf8_lossy(&row[start..end]).into_owned())
}

/// Whether `value` is a block scalar's header: `|` or `>`, a chomping and an indentation
/// indicator, an optional comment.
fn is_block_indicator(value: &[u8]) -> bool {
    let Some((&first, rest)) = value.split_first() else {
        return false;
    };
    let header_end = rest
        .iter()
        .position(|c| !matches!(c, b'-' | b'+' | b'0'..=b'9'))
        .unwrap_or(rest.len());
    let tail = rest[header_end..].trim_ascii_start();
    matches!(first, b'|' | b'>') && (tail.is_empty() || tail[0] == b'#')
}

/// Hides the lines below line `n` that are more indented than it (blank ones included): a
/// value written under its key. Returns the number of the first line not hidden.
fn hide_block_below(
    text: &str,
    all: &[Range<usize>],
    n: usize,
    out: &mut Vec<Range<usize>>,
) -> usize {
    let bytes = text.as_bytes();
    let indent = |r: &Range<usize>| {
        bytes
            .get(r.clone())
            .map_or(0, |row| row.iter().take_while(|&&c| c == b' ').count())
    };
    let key_indent = indent(&all[n]);
    for (below, line) in all.iter().enumerate().skip(n + 1) {
        let width = indent(line);
        if width == line.len() {
            continue;
        }
        if width <= key_indent {
            return below;
        }
        let row = &bytes[line.clone()];
        literal_parts(row, width..row.len(), line.start, out);
    }
    all.len()
}

/// Pushes the parts of `bytes[range]` (shifted by `base`) that are not `${...}` references.
fn literal_parts(bytes: &[u8], range: Range<usize>, base: usize, out: &mut Vec<Range<usize>>) {
    let end = range.end.min(bytes.len());
    let mut start = range.start;
    let mut i = range.start;
    while i < end {
        let reference = (bytes[i] == b'$' && bytes.get(i + 1) == Some(&b'{'))
            .then(|| bytes[i..end].iter().position(|&c| c == b'}'))
            .flatten();
        if let Some(close) = reference {
            if start < i {
                out.push(base + start..base + i);
            }
            i += close + 1;
            start = i;
            continue;
        }
        i += 1;
    }
    if start < end {
        out.push(base + start..base + end);
    }
}

/// The first `:` of `info` that is not inside a `${...}`.
fn top_level_colon(info: &[u8]) -> Option<usize> {
    let mut depth = 0usize;
    for (i, &b) in info.iter().enumerate() {
        match b {
            b'$' if info.get(i + 1) == Some(&b'{') => depth += 1,
            b'}' if depth > 0 => depth -= 1,
            b':' if depth == 0 => return Some(i),
            _ => {}
        }
    }
    None
}

/// The first place at or after `from` where `needle` occurs in `haystack`.
fn find(haystack: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    haystack
        .get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| from + p)
}

/// Bytes a key or parameter name is made of.
fn is_name_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.')
}

/// `ranges` sorted, joined where they touch or overlap, and widened to character boundaries.
fn merged(text: &str, mut ranges: Vec<Range<usize>>) -> Vec<Range<usize>> {
    for r in &mut ranges {
        r.end = r.end.min(text.len());
        while r.start > 0 && !text.is_char_boundary(r.start) {
            r.start -= 1;
        }
        while r.end < text.len() && !text.is_char_boundary(r.end) {
            r.end += 1;
        }
    }
    ranges.retain(|r| r.start < r.end);
    ranges.sort_by_key(|r| r.start);
    let mut out: Vec<Range<usize>> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match out.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hidden(text: &str) -> String {
        Secrets::find(text).hide_in(text)
    }

    #[test]
    fn a_url_password_is_hidden_under_any_key_keeping_every_offset() {
        let text = "  urll: postgres://user:Hunter2@127.0.0.1/test\n  kind: sql-out\n";
        let shown = hidden(text);
        assert_eq!(
            shown,
            "  urll: postgres://user:*******@127.0.0.1/test\n  kind: sql-out\n"
        );
        assert_eq!(shown.len(), text.len());
    }

    #[test]
    fn environment_references_are_kept() {
        let text = "url: postgres://${PGUSER:-root}:${PGPASSWORD}@h/db?password=${PW}";
        assert_eq!(hidden(text), text);
        assert_eq!(
            hidden("url: amqp://u:pre${X}post@h"),
            "url: amqp://u:***${X}****@h"
        );
    }

    #[test]
    fn a_password_query_parameter_and_connection_string_value_are_hidden() {
        assert_eq!(
            hidden("url: mysql://h/db?user=a&password=s3cr&ssl=1"),
            "url: mysql://h/db?user=a&password=****&ssl=1"
        );
        assert_eq!(
            hidden("dsn: host=h PASSWORD=s3cr dbname=x"),
            "dsn: host=h PASSWORD=**** dbname=x"
        );
        assert_eq!(
            hidden("when: '$.token == \"a\"'"),
            "when: '$.token == \"a\"'"
        );
    }

    #[test]
    fn values_of_keys_named_like_secrets_are_hidden() {
        assert_eq!(hidden("    password: abc"), "    password: ***");
        assert_eq!(
            hidden("  {api-token: abc, x: 1}"),
            "  {api-token: **********"
        );
        assert_eq!(hidden("\"dbPassword\": 'a b'"), "\"dbPassword\": *****");
        assert_eq!(
            hidden("db:\n  secret: |\n    one\n\n    two\n  kind: x\n"),
            "db:\n  secret: |\n    ***\n\n    ***\n  kind: x\n"
        );
        assert_eq!(
            hidden("password-env: DB_PW\nbearer-token-env: T\npassword-resets: {}"),
            "password-env: DB_PW\nbearer-token-env: T\npassword-resets: {}"
        );
    }

    #[test]
    fn secret_names_are_told_by_their_last_words() {
        for name in [
            "password",
            "db_password",
            "apiToken",
            "API-KEY",
            "pgpassword",
            "pwd",
        ] {
            assert!(is_secret_name(name), "{name}");
        }
        for name in [
            "password-env",
            "routing-key",
            "key",
            "tokens",
            "bypass",
            "url",
        ] {
            assert!(!is_secret_name(name), "{name}");
        }
    }

    #[test]
    fn messages_lose_the_secrets_of_the_file_and_keep_placeholders() {
        let text = "url: amqp://guest:Hunter2@h\nx: nats://a:pw@h";
        let secrets = Secrets::find(text);
        assert_eq!(
            secrets.scrub("unknown channel `amqp://guest:Hunter2@h`", &[]),
            "unknown channel `amqp://guest:***@h`"
        );
        assert_eq!(
            secrets.scrub("see nats://a:pw@h", &[]),
            "see nats://a:***@h"
        );
        let url_line = 5..text.find('\n').unwrap_or(0);
        assert_eq!(
            secrets.scrub("quoted: Hunter2.", &[url_line]),
            "quoted: ***."
        );
        assert_eq!(secrets.scrub("quoted: Hunter2.", &[]), "quoted: Hunter2.");
        let whole = 0..text.len();
        assert_eq!(
            secrets.scrub("like `amqp://USER:PASSWORD@HOST`; pwned", &[whole]),
            "like `amqp://USER:PASSWORD@HOST`; pwned"
        );
    }

    proptest::proptest! {
        #[test]
        fn hiding_keeps_the_length_and_never_shows_a_url_password(
            before in "\\PC{0,80}",
            password in "[A-Za-z0-9!%^()]{1,20}",
            after in "[^\n]{0,40}",
        ) {
            let text = format!("{before}\n  x: amqp://u:{password}@h/{after}\n");
            let shown = hidden(&text);
            proptest::prop_assert_eq!(shown.len(), text.len());
            let line = shown.lines().find(|l| l.starts_with("  x: amqp://u:"));
            let secret = format!(":{password}@");
            proptest::prop_assert!(line.is_some_and(|l| !l.contains(&secret)));
        }
    }

    #[test]
    fn hostile_lines_are_looked_at_once() {
        // Each of these is quadratic when every match looks to the end of its line.
        let long = |unit: &str| unit.repeat(400_000);
        for text in [
            long("password="),
            long("password: "),
            long("a://b:c"),
            format!("{}@", long("x://")),
        ] {
            let shown = hidden(&text);
            assert_eq!(shown.len(), text.len());
        }
        let nested: String = (0..3000)
            .map(|i| format!("{}password:\n", " ".repeat(i)))
            .collect();
        assert_eq!(hidden(&nested).len(), nested.len());
    }

    #[test]
    fn multibyte_secrets_keep_the_text_valid() {
        let text = "url: amqp://u:pässwörd@h é";
        let shown = hidden(text);
        assert_eq!(shown.len(), text.len());
        assert!(shown.starts_with("url: amqp://u:**********@h"), "{shown}");
        assert!(shown.ends_with(" é"));
    }
}
