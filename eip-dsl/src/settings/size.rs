//! Sizes as written in a flow file: a whole number of bytes (`4096`), or a number and a unit
//! (`512 MiB`, `2GiB`, `10 MB`, `1.5 GB`).
//!
//! The binary units `KiB`, `MiB`, `GiB`, `TiB` are powers of 1024, the decimal units `kB`,
//! `MB`, `GB`, `TB` powers of 1000, and `B` is a byte; a space between the number and the unit
//! is optional. Units are written in their usual case: `mb` or `Mb` (megabits, to many
//! readers) is refused with the spelling meant, rather than guessed. A fraction is accepted
//! when it comes to a whole number of bytes (`1.5 KiB` is 1536), and the size must be more
//! than 0 and fit in 64 bits.

/// A size that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ByteSizeError {
    /// Not a number optionally followed by a unit.
    #[error("`{text}` is not a size")]
    Syntax {
        /// The text as written.
        text: String,
    },
    /// A number followed by something other than a known unit.
    #[error("`{text}`: unknown unit `{unit}`")]
    Unit {
        /// The text as written.
        text: String,
        /// The unit as written.
        unit: String,
        /// The unit meant, when only its case is wrong (`mib` → `MiB`).
        suggestion: Option<&'static str>,
    },
    /// A fraction that is not a whole number of bytes (`1.3 KiB`, `0.5`).
    #[error("`{text}` is not a whole number of bytes")]
    Fraction {
        /// The text as written.
        text: String,
    },
    /// Zero or less.
    #[error("`{text}` is not more than 0 bytes")]
    NotPositive {
        /// The text as written.
        text: String,
    },
    /// More than 2^64 - 1 bytes.
    #[error("`{text}` is too large: at most {max} bytes", max = u64::MAX)]
    TooLarge {
        /// The text as written.
        text: String,
    },
}

impl ByteSizeError {
    /// How to write it instead.
    pub fn help(&self) -> String {
        const FORMS: &str = "a size is a whole number of bytes (`4096`), or a number and a \
                             unit: `512 MiB`, `2GiB`, `10 MB`, `1.5 GB`";
        match self {
            ByteSizeError::Unit {
                suggestion: Some(unit),
                ..
            } => format!("units are written in their usual case: `{unit}`"),
            ByteSizeError::Unit { .. } => format!(
                "{FORMS}; the units are `B`, `KiB`, `MiB`, `GiB`, `TiB` (powers of 1024) and \
                 `kB`, `MB`, `GB`, `TB` (powers of 1000)"
            ),
            ByteSizeError::Fraction { .. } => {
                format!("{FORMS}; write it in a smaller unit, or in bytes")
            }
            ByteSizeError::Syntax { .. }
            | ByteSizeError::NotPositive { .. }
            | ByteSizeError::TooLarge { .. } => FORMS.to_owned(),
        }
    }
}

/// Every unit and its size in bytes, largest first within each family.
pub(crate) const UNITS: &[(&str, u64)] = &[
    ("TiB", 1 << 40),
    ("GiB", 1 << 30),
    ("MiB", 1 << 20),
    ("KiB", 1 << 10),
    ("TB", 1_000_000_000_000),
    ("GB", 1_000_000_000),
    ("MB", 1_000_000),
    ("kB", 1_000),
    ("B", 1),
];

/// Digits after the point beyond which no fraction of these units is a whole byte count.
const MAX_FRACTION_DIGITS: usize = 24;

/// Parses a size in bytes: digits, optionally a fraction, optionally a space, optionally a
/// unit.
///
/// ```
/// use eip_dsl::validate::parse_byte_size;
///
/// assert_eq!(parse_byte_size("4096"), Ok(4096));
/// assert_eq!(parse_byte_size("512 MiB"), Ok(512 * 1024 * 1024));
/// assert_eq!(parse_byte_size("1.5 GB"), Ok(1_500_000_000));
/// assert!(parse_byte_size("0").is_err());
/// assert!(parse_byte_size("2 gib").is_err());
/// ```
pub fn parse_byte_size(text: &str) -> Result<u64, ByteSizeError> {
    let syntax = || ByteSizeError::Syntax {
        text: text.to_owned(),
    };
    let (negative, unsigned) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let number_len = unsigned
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(unsigned.len());
    let (number, rest) = unsigned.split_at(number_len);
    let unit = rest.strip_prefix(' ').unwrap_or(rest);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() || number.ends_with('.') || fraction.contains('.') {
        return Err(syntax());
    }
    let per_unit = if unit.is_empty() {
        1
    } else {
        unit_bytes(text, unit)?
    };
    let bytes =
        exact_bytes(whole, fraction.trim_end_matches('0'), per_unit).map_err(|e| match e {
            Inexact::Fraction => ByteSizeError::Fraction {
                text: text.to_owned(),
            },
            Inexact::TooLarge => ByteSizeError::TooLarge {
                text: text.to_owned(),
            },
        })?;
    if negative || bytes == 0 {
        return Err(ByteSizeError::NotPositive {
            text: text.to_owned(),
        });
    }
    Ok(bytes)
}

/// The bytes per `unit`, or why it is not a unit.
fn unit_bytes(text: &str, unit: &str) -> Result<u64, ByteSizeError> {
    if let Some((_, bytes)) = UNITS.iter().find(|(name, _)| *name == unit) {
        return Ok(*bytes);
    }
    if !unit.chars().all(|c| c.is_ascii_alphabetic()) {
        return Err(ByteSizeError::Syntax {
            text: text.to_owned(),
        });
    }
    Err(ByteSizeError::Unit {
        text: text.to_owned(),
        unit: unit.to_owned(),
        suggestion: UNITS
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(unit))
            .map(|(name, _)| *name),
    })
}

enum Inexact {
    Fraction,
    TooLarge,
}

/// `whole.fraction` times `per_unit`, exactly, in integers.
fn exact_bytes(whole: &str, fraction: &str, per_unit: u64) -> Result<u64, Inexact> {
    // Digits only here; a number too long for u128 is too large, whatever its unit.
    let whole: u128 = whole.parse().map_err(|_| Inexact::TooLarge)?;
    let mut bytes = whole
        .checked_mul(u128::from(per_unit))
        .ok_or(Inexact::TooLarge)?;
    if !fraction.is_empty() {
        if fraction.len() > MAX_FRACTION_DIGITS {
            return Err(Inexact::Fraction);
        }
        let scale = 10u128.pow(u32::try_from(fraction.len()).map_err(|_| Inexact::Fraction)?);
        let part: u128 = fraction.parse().map_err(|_| Inexact::Fraction)?;
        // part < 10^24 and per_unit < 2^41: the product fits in u128.
        let scaled = part
            .checked_mul(u128::from(per_unit))
            .ok_or(Inexact::Fraction)?;
        if scaled % scale != 0 {
            return Err(Inexact::Fraction);
        }
        bytes = bytes.checked_add(scaled / scale).ok_or(Inexact::TooLarge)?;
    }
    u64::try_from(bytes).map_err(|_| Inexact::TooLarge)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * KIB;
    const GIB: u64 = 1024 * MIB;

    #[test]
    fn whole_numbers_are_bytes() {
        assert_eq!(parse_byte_size("4096"), Ok(4096));
        assert_eq!(parse_byte_size("1"), Ok(1));
        assert_eq!(parse_byte_size("10 B"), Ok(10));
        assert_eq!(parse_byte_size("18446744073709551615"), Ok(u64::MAX));
    }

    #[test]
    fn binary_and_decimal_units_with_or_without_a_space() {
        assert_eq!(parse_byte_size("512 MiB"), Ok(512 * MIB));
        assert_eq!(parse_byte_size("2GiB"), Ok(2 * GIB));
        assert_eq!(parse_byte_size("4 KiB"), Ok(4 * KIB));
        assert_eq!(parse_byte_size("1 TiB"), Ok(1024 * GIB));
        assert_eq!(parse_byte_size("10 MB"), Ok(10_000_000));
        assert_eq!(parse_byte_size("3kB"), Ok(3_000));
        assert_eq!(parse_byte_size("2 TB"), Ok(2_000_000_000_000));
    }

    #[test]
    fn fractions_that_come_to_whole_bytes_are_accepted() {
        assert_eq!(parse_byte_size("1.5 GB"), Ok(1_500_000_000));
        assert_eq!(parse_byte_size("1.5 KiB"), Ok(1536));
        assert_eq!(parse_byte_size("0.5 KiB"), Ok(512));
        assert_eq!(parse_byte_size("2.000 MiB"), Ok(2 * MIB));
        assert_eq!(parse_byte_size("0.0009765625 KiB"), Ok(1));
    }

    #[test]
    fn fractions_of_a_byte_are_refused() {
        for bad in [
            "1.3 KiB",
            "0.5",
            "1.5 B",
            "1.0001 kB",
            "0.1111111111111111111111111 TiB",
        ] {
            assert!(
                matches!(parse_byte_size(bad), Err(ByteSizeError::Fraction { .. })),
                "{bad}: {:?}",
                parse_byte_size(bad)
            );
        }
    }

    #[test]
    fn zero_and_negative_sizes_are_refused() {
        for bad in ["0", "0 GiB", "0.0 MB", "-1", "-5 MiB"] {
            assert!(
                matches!(parse_byte_size(bad), Err(ByteSizeError::NotPositive { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn overflow_is_an_error_not_a_panic() {
        for bad in [
            "18446744073709551616",
            "16777216 TiB",
            "99999999999999999999999999999999999999999999 B",
            "18446744073709551615.5 B",
        ] {
            let result = parse_byte_size(bad);
            assert!(
                matches!(
                    result,
                    Err(ByteSizeError::TooLarge { .. } | ByteSizeError::Fraction { .. })
                ),
                "{bad}: {result:?}"
            );
        }
        assert!(matches!(
            parse_byte_size("16777216 TiB"),
            Err(ByteSizeError::TooLarge { .. })
        ));
    }

    #[test]
    fn a_unit_in_the_wrong_case_gets_its_usual_spelling() {
        let err = parse_byte_size("2 gib").unwrap_err();
        assert_eq!(
            err,
            ByteSizeError::Unit {
                text: "2 gib".into(),
                unit: "gib".into(),
                suggestion: Some("GiB"),
            }
        );
        assert!(err.help().contains("`GiB`"), "{}", err.help());
        let err = parse_byte_size("10 KB").unwrap_err();
        assert!(err.help().contains("`kB`"), "{}", err.help());
        let err = parse_byte_size("10 Mb").unwrap_err();
        assert!(err.help().contains("`MB`"), "{}", err.help());
    }

    #[test]
    fn other_forms_are_refused() {
        for bad in [
            "", " ", "MiB", "1.", ".5 MiB", "1..5", "1.2.3", "1  MiB", " 1 MiB", "1 MiB ",
            "1,5 GB", "1e9", "+1", "0x10", "1_000", "1 M i B",
        ] {
            assert!(
                matches!(parse_byte_size(bad), Err(ByteSizeError::Syntax { .. })),
                "{bad:?}: {:?}",
                parse_byte_size(bad)
            );
        }
        assert!(matches!(
            parse_byte_size("3 PB"),
            Err(ByteSizeError::Unit {
                suggestion: None,
                ..
            })
        ));
    }
}
