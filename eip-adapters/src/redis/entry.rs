//! The entries of a stream as Redis answers `XREADGROUP` and `XAUTOCLAIM`, parsed from its
//! reply (RESP2 arrays or RESP3 maps alike).

use ::redis::Value;

/// One entry: its id and its fields, or no fields when it was deleted (trimmed) after it was
/// delivered and before it was acknowledged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) id: String,
    pub(crate) fields: Option<Vec<(Vec<u8>, Vec<u8>)>>,
}

/// Why a reply is not the one expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unexpected reply to {command}: {what}")]
pub(crate) struct ReplyError {
    pub(crate) command: &'static str,
    pub(crate) what: &'static str,
}

fn wrong(command: &'static str, what: &'static str) -> ReplyError {
    ReplyError { command, what }
}

/// The entries of an `XREADGROUP` reply for one stream (nil: none came within the block).
pub(crate) fn read_reply(reply: Value) -> Result<Vec<Entry>, ReplyError> {
    const CMD: &str = "XREADGROUP";
    let streams = match reply {
        Value::Nil => return Ok(Vec::new()),
        Value::Array(streams) => streams
            .into_iter()
            .map(|stream| match stream {
                Value::Array(pair) => pair
                    .into_iter()
                    .nth(1)
                    .ok_or(wrong(CMD, "a stream without entries")),
                _ => Err(wrong(CMD, "a stream that is not a pair")),
            })
            .collect::<Result<Vec<_>, _>>()?,
        Value::Map(streams) => streams.into_iter().map(|(_, entries)| entries).collect(),
        _ => return Err(wrong(CMD, "neither nil, an array nor a map")),
    };
    let mut all = Vec::new();
    for entries in streams {
        all.extend(entries_of(CMD, entries)?);
    }
    Ok(all)
}

/// The next cursor and the entries of an `XAUTOCLAIM` reply.
pub(crate) fn claim_reply(reply: Value) -> Result<(String, Vec<Entry>), ReplyError> {
    const CMD: &str = "XAUTOCLAIM";
    let Value::Array(parts) = reply else {
        return Err(wrong(CMD, "not an array"));
    };
    let mut parts = parts.into_iter();
    let cursor = parts.next().and_then(text).ok_or(wrong(CMD, "no cursor"))?;
    let entries = parts.next().ok_or(wrong(CMD, "no entries"))?;
    Ok((cursor, entries_of(CMD, entries)?))
}

fn entries_of(command: &'static str, entries: Value) -> Result<Vec<Entry>, ReplyError> {
    let entries = match entries {
        Value::Nil => return Ok(Vec::new()),
        Value::Array(entries) => entries,
        _ => return Err(wrong(command, "entries that are not an array")),
    };
    entries
        .into_iter()
        .map(|entry| {
            let Value::Array(parts) = entry else {
                return Err(wrong(command, "an entry that is not an array"));
            };
            let mut parts = parts.into_iter();
            let id = parts
                .next()
                .and_then(text)
                .ok_or(wrong(command, "an entry without id"))?;
            let fields = match parts.next() {
                None | Some(Value::Nil) => None,
                Some(Value::Array(flat)) => {
                    let mut flat = flat.into_iter();
                    let mut fields = Vec::with_capacity(flat.len() / 2);
                    while let Some(name) = flat.next() {
                        let value = flat.next().ok_or(wrong(command, "a field without value"))?;
                        fields.push((
                            bytes(name)
                                .ok_or(wrong(command, "a field name that is not a string"))?,
                            bytes(value)
                                .ok_or(wrong(command, "a field value that is not a string"))?,
                        ));
                    }
                    Some(fields)
                }
                Some(Value::Map(pairs)) => Some(
                    pairs
                        .into_iter()
                        .map(|(n, v)| Some((bytes(n)?, bytes(v)?)))
                        .collect::<Option<Vec<_>>>()
                        .ok_or(wrong(command, "a field that is not a string"))?,
                ),
                Some(_) => return Err(wrong(command, "fields that are not an array")),
            };
            Ok(Entry { id, fields })
        })
        .collect()
}

fn bytes(value: Value) -> Option<Vec<u8>> {
    match value {
        Value::BulkString(b) => Some(b),
        Value::SimpleString(s) => Some(s.into_bytes()),
        Value::VerbatimString { text, .. } => Some(text.into_bytes()),
        Value::Int(i) => Some(i.to_string().into_bytes()),
        _ => None,
    }
}

fn text(value: Value) -> Option<String> {
    String::from_utf8(bytes(value)?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn a_read_reply_gives_each_entry_with_its_fields_and_deleted_ones_without() {
        let reply = Value::Array(vec![Value::Array(vec![
            bulk("orders"),
            Value::Array(vec![
                Value::Array(vec![bulk("1-0"), Value::Array(vec![bulk("a"), bulk("b")])]),
                Value::Array(vec![bulk("2-0"), Value::Nil]),
            ]),
        ])]);
        let entries = read_reply(reply).unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].id, "1-0");
        assert_eq!(
            entries[0].fields,
            Some(vec![(b"a".to_vec(), b"b".to_vec())])
        );
        assert_eq!(entries[1].fields, None);
        assert!(read_reply(Value::Nil).unwrap().is_empty());
        assert!(read_reply(Value::Int(3)).is_err());
    }

    #[test]
    fn a_claim_reply_gives_the_cursor_and_the_entries() {
        let reply = Value::Array(vec![
            bulk("0-0"),
            Value::Array(vec![Value::Array(vec![
                bulk("5-1"),
                Value::Array(vec![bulk("k"), bulk("v")]),
            ])]),
            Value::Array(vec![]),
        ]);
        let (cursor, entries) = claim_reply(reply).unwrap();
        assert_eq!(cursor, "0-0");
        assert_eq!(entries[0].id, "5-1");
    }
}
