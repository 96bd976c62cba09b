//! The bound on how deep an expression nests, checked before jaq parses it.

use super::error::{JqError, JqErrorKind};

/// Refuses an expression that nests deeper than `max` before jaq sees it: jaq parses, compiles
/// and runs an expression by recursion, one level per bracket and per operator of a chain
/// (`1 + 1 + ...`, `-(-(...))`, `a | b | ...`), and an expression a few hundred deep overflows a
/// 2 MiB thread stack, which aborts the process. The depth counted is an upper bound: brackets
/// plus the operators and keywords before each point at its bracket level (siblings separated
/// by `;` count apart). Strings, their `\(...)` interpolations and
/// comments are read as jq reads them.
pub(crate) fn check(source: &str, max: usize) -> Result<(), JqError> {
    let mut levels = vec![Level {
        open: 0,
        base: 0,
        ops: 0,
        fields: 0,
    }];
    let mut in_string = false;
    let bytes = source.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let start = i;
        i += 1;
        if in_string {
            match b {
                b'\\' if bytes.get(i) == Some(&b'(') => {
                    i += 1;
                    in_string = false;
                    levels.push(open_level(&levels, b'\\'));
                }
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        let level = levels.len() - 1;
        match b {
            b'"' => in_string = true,
            b'#' => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'(' | b'[' | b'{' => levels.push(open_level(&levels, b)),
            b')' | b']' | b'}' if levels.len() > 1 => {
                let closed = levels.pop().map_or(0, |l| l.open);
                in_string = closed == b'\\' && b == b')';
            }
            b';' => levels[level].ops = 0,
            // An object's fields nest too, but a field costs jaq about half an operator's
            // stack (measured: 255 fields are fine where 200 nested brackets are not).
            b',' if levels[level].open == b'{' => {
                levels[level].fields += 1;
                if levels[level].fields % 2 == 0 {
                    levels[level].ops += 1;
                }
            }
            b':' if levels[level].open == b'{' => {}
            b'|' | b',' | b'+' | b'-' | b'*' | b'/' | b'%' | b'=' | b'<' | b'>' | b'?' => {
                levels[level].ops += 1;
            }
            b'a'..=b'z' | b'A'..=b'Z' | b'_' | b'$' => {
                while i < bytes.len()
                    && matches!(bytes[i], b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b':')
                {
                    i += 1;
                }
                let word = &source[start..i];
                if matches!(
                    word,
                    "if" | "elif" | "try" | "reduce" | "foreach" | "as" | "label" | "and" | "or"
                ) {
                    levels[level].ops += 1;
                }
            }
            _ => {}
        }
        let top = &levels[levels.len() - 1];
        if top.base + top.ops > max {
            return Err(JqError::at(start, i - start, JqErrorKind::TooDeep(max)));
        }
    }
    Ok(())
}

/// One open bracket: what it is (`\` for an interpolation, inside which a `)` goes back into
/// the string), the depth at its opening, and the operators counted in it so far.
struct Level {
    open: u8,
    base: usize,
    ops: usize,
    fields: usize,
}

fn open_level(levels: &[Level], open: u8) -> Level {
    let base = levels.last().map_or(0, |l| l.base + l.ops) + 1;
    Level {
        open,
        base,
        ops: 0,
        fields: 0,
    }
}
