//! Writing JSON text directly: a decoder builds each record's JSON without a `Value` between.

/// Appends `s` to `out` as a JSON string, quotes included.
#[cfg(feature = "csv")]
pub(crate) fn push_str(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    let bytes = s.as_bytes();
    // Most values need no escape: one scan, one copy.
    let Some(first) = bytes.iter().position(|b| NEEDS_ESCAPE[usize::from(*b)]) else {
        out.extend_from_slice(bytes);
        out.push(b'"');
        return;
    };
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate().skip(first) {
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x00..=0x1f => {
                out.extend_from_slice(&bytes[start..i]);
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(b >> 4)]);
                out.push(HEX[usize::from(b & 0xf)]);
                start = i + 1;
                continue;
            }
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        out.extend_from_slice(escape);
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

#[cfg(feature = "csv")]
const HEX: &[u8; 16] = b"0123456789abcdef";

/// The bytes a JSON string can not hold as they are: control characters, `"` and `\`.
#[cfg(feature = "csv")]
const NEEDS_ESCAPE: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = true;
        b += 1;
    }
    table[b'"' as usize] = true;
    table[b'\\' as usize] = true;
    table
};

/// A JSON value's type, as error messages name it.
pub(crate) fn type_name(value: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(all(test, feature = "csv"))]
mod tests {
    use super::*;

    #[test]
    fn written_strings_read_back_as_themselves() {
        for s in [
            "",
            "plain",
            "a \"q\" \\ b",
            "tab\tnl\ncr\r",
            "\u{1}\u{1f}",
            "é ✓ 𝄞",
        ] {
            let mut out = Vec::new();
            push_str(&mut out, s);
            let back: String = serde_json::from_slice(&out).unwrap();
            assert_eq!(back, s);
        }
    }
}
