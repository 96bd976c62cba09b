//! What a journal record holds: the round's effects on the database, each with explicit values,
//! in the order the committer applied them.
//!
//! An [`Op`] is one change to the tables of `store.redb` as the committer decided it: the
//! sequence number an append was given, the row a queue was left with, the expired entries an
//! expiry looked at. Nothing in it depends on when it is applied, so applying a round's ops
//! (`apply`) to the state the round started from gives the state it ended with, whether the
//! committer does it in its round or an open does it again from the journal.
//!
//! Encoding: a tag byte, then the fields in order, integers little-endian, byte strings and
//! names as a `u32` length and the bytes. [`decode`] checks every length against what is left,
//! so a record that passed its checksum but does not parse (a bug, never the disk: the
//! checksum covers it) is refused as damage rather than read past its end.

/// One effect of a round on the database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Op<'a> {
    /// Record `seq` of queue `queue` is `record` (the payload; the frame is made on apply).
    Append {
        queue: u32,
        seq: u64,
        record: &'a [u8],
    },
    /// Record `seq` of queue `queue` is deleted (an ack, a damaged record removed).
    Delete { queue: u32, seq: u64 },
    /// Records `first..=last` of queue `queue` are deleted, those that are there: acks of
    /// consecutive sequence numbers in one round, applied as one pass over the B-tree.
    DeleteRange { queue: u32, first: u64, last: u64 },
    /// A damaged record is copied into the quarantine.
    SetAside {
        name: &'a str,
        seq: u64,
        bytes: &'a [u8],
        reason: &'a str,
        at: u64,
    },
    /// The queue `name` is created with id `id`, empty.
    DeclareQueue { name: &'a str, id: u32 },
    /// The queue `name` (id `id`) is deleted with its records.
    RemoveQueue { name: &'a str, id: u32 },
    /// The `queues` row of a queue: its id, head and live bytes.
    QueueRow {
        name: &'a str,
        id: u32,
        head: u64,
        bytes: u64,
    },
    /// The key table `name` is created with id `id`, empty.
    DeclareTable { name: &'a str, id: u32 },
    /// `value` is stored under `key` in key table `table`.
    Put {
        table: u32,
        key: &'a [u8],
        value: &'a [u8],
        expires_at: u64,
    },
    /// The entry under `key` in key table `table` is deleted.
    Remove { table: u32, key: &'a [u8] },
    /// The expiry index rows `candidates` of key table `table`, found expired at `now_ms`, are
    /// settled: each row goes, and its entry too if the entry's own expiry says so.
    Expire {
        table: u32,
        now_ms: u64,
        candidates: Vec<(u64, &'a [u8])>,
    },
    /// The `tables` row of a key table: its id and live bytes.
    TableRow { name: &'a str, id: u32, bytes: u64 },
}

const APPEND: u8 = 1;
const DELETE: u8 = 2;
const SET_ASIDE: u8 = 3;
const DECLARE_QUEUE: u8 = 4;
const REMOVE_QUEUE: u8 = 5;
const QUEUE_ROW: u8 = 6;
const DECLARE_TABLE: u8 = 7;
const PUT: u8 = 8;
const REMOVE: u8 = 9;
const EXPIRE: u8 = 10;
const TABLE_ROW: u8 = 11;
const DELETE_RANGE: u8 = 12;

impl Op<'_> {
    /// Appends the encoding of this op to `out`.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Op::Append { queue, seq, record } => {
                out.push(APPEND);
                put_u32(out, *queue);
                put_u64(out, *seq);
                put_bytes(out, record);
            }
            Op::Delete { queue, seq } => {
                out.push(DELETE);
                put_u32(out, *queue);
                put_u64(out, *seq);
            }
            Op::DeleteRange { queue, first, last } => {
                out.push(DELETE_RANGE);
                put_u32(out, *queue);
                put_u64(out, *first);
                put_u64(out, *last);
            }
            Op::SetAside {
                name,
                seq,
                bytes,
                reason,
                at,
            } => {
                out.push(SET_ASIDE);
                put_bytes(out, name.as_bytes());
                put_u64(out, *seq);
                put_bytes(out, bytes);
                put_bytes(out, reason.as_bytes());
                put_u64(out, *at);
            }
            Op::DeclareQueue { name, id } => {
                out.push(DECLARE_QUEUE);
                put_bytes(out, name.as_bytes());
                put_u32(out, *id);
            }
            Op::RemoveQueue { name, id } => {
                out.push(REMOVE_QUEUE);
                put_bytes(out, name.as_bytes());
                put_u32(out, *id);
            }
            Op::QueueRow {
                name,
                id,
                head,
                bytes,
            } => {
                out.push(QUEUE_ROW);
                put_bytes(out, name.as_bytes());
                put_u32(out, *id);
                put_u64(out, *head);
                put_u64(out, *bytes);
            }
            Op::DeclareTable { name, id } => {
                out.push(DECLARE_TABLE);
                put_bytes(out, name.as_bytes());
                put_u32(out, *id);
            }
            Op::Put {
                table,
                key,
                value,
                expires_at,
            } => {
                out.push(PUT);
                put_u32(out, *table);
                put_bytes(out, key);
                put_bytes(out, value);
                put_u64(out, *expires_at);
            }
            Op::Remove { table, key } => {
                out.push(REMOVE);
                put_u32(out, *table);
                put_bytes(out, key);
            }
            Op::Expire {
                table,
                now_ms,
                candidates,
            } => {
                out.push(EXPIRE);
                put_u32(out, *table);
                put_u64(out, *now_ms);
                put_u32(out, u32::try_from(candidates.len()).unwrap_or(u32::MAX));
                for (at, key) in candidates.iter().take(u32::MAX as usize) {
                    put_u64(out, *at);
                    put_bytes(out, key);
                }
            }
            Op::TableRow { name, id, bytes } => {
                out.push(TABLE_ROW);
                put_bytes(out, name.as_bytes());
                put_u32(out, *id);
                put_u64(out, *bytes);
            }
        }
    }
}

/// Why the body of a record could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("op {index} at byte {at} of the record: {what}")]
pub(crate) struct DecodeError {
    pub(crate) index: usize,
    pub(crate) at: usize,
    pub(crate) what: &'static str,
}

/// Every op of a record's body, in order.
pub(crate) fn decode(body: &[u8]) -> Result<Vec<Op<'_>>, DecodeError> {
    let mut reader = Reader { body, at: 0 };
    let mut ops = Vec::new();
    while reader.at < body.len() {
        let start = reader.at;
        let op = reader.op().map_err(|what| DecodeError {
            index: ops.len(),
            at: start,
            what,
        })?;
        ops.push(op);
    }
    Ok(ops)
}

fn put_u32(out: &mut Vec<u8>, value: u32) {
    out.extend_from_slice(&value.to_le_bytes());
}

fn put_u64(out: &mut Vec<u8>, value: u64) {
    out.extend_from_slice(&value.to_le_bytes());
}

/// A length (saturated: a byte string of 4 GiB or more can not be a record of a round) and
/// the bytes.
fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_u32(out, u32::try_from(bytes.len()).unwrap_or(u32::MAX));
    out.extend_from_slice(bytes);
}

struct Reader<'a> {
    body: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, len: usize) -> Result<&'a [u8], &'static str> {
        let end = self
            .at
            .checked_add(len)
            .filter(|end| *end <= self.body.len())
            .ok_or("it ends in the middle of a field")?;
        let bytes = &self.body[self.at..end];
        self.at = end;
        Ok(bytes)
    }

    fn u8(&mut self) -> Result<u8, &'static str> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> Result<u32, &'static str> {
        let bytes = self.take(4)?;
        Ok(u32::from_le_bytes(
            bytes.try_into().map_err(|_| "a short field")?,
        ))
    }

    fn u64(&mut self) -> Result<u64, &'static str> {
        let bytes = self.take(8)?;
        Ok(u64::from_le_bytes(
            bytes.try_into().map_err(|_| "a short field")?,
        ))
    }

    fn bytes(&mut self) -> Result<&'a [u8], &'static str> {
        let len = self.u32()? as usize;
        self.take(len)
    }

    fn str(&mut self) -> Result<&'a str, &'static str> {
        std::str::from_utf8(self.bytes()?).map_err(|_| "a name that is not UTF-8")
    }

    fn op(&mut self) -> Result<Op<'a>, &'static str> {
        Ok(match self.u8()? {
            APPEND => Op::Append {
                queue: self.u32()?,
                seq: self.u64()?,
                record: self.bytes()?,
            },
            DELETE => Op::Delete {
                queue: self.u32()?,
                seq: self.u64()?,
            },
            DELETE_RANGE => {
                let (queue, first, last) = (self.u32()?, self.u64()?, self.u64()?);
                if first > last {
                    return Err("a range of records that ends before it starts");
                }
                Op::DeleteRange { queue, first, last }
            }
            SET_ASIDE => Op::SetAside {
                name: self.str()?,
                seq: self.u64()?,
                bytes: self.bytes()?,
                reason: self.str()?,
                at: self.u64()?,
            },
            DECLARE_QUEUE => Op::DeclareQueue {
                name: self.str()?,
                id: self.u32()?,
            },
            REMOVE_QUEUE => Op::RemoveQueue {
                name: self.str()?,
                id: self.u32()?,
            },
            QUEUE_ROW => Op::QueueRow {
                name: self.str()?,
                id: self.u32()?,
                head: self.u64()?,
                bytes: self.u64()?,
            },
            DECLARE_TABLE => Op::DeclareTable {
                name: self.str()?,
                id: self.u32()?,
            },
            PUT => Op::Put {
                table: self.u32()?,
                key: self.bytes()?,
                value: self.bytes()?,
                expires_at: self.u64()?,
            },
            REMOVE => Op::Remove {
                table: self.u32()?,
                key: self.bytes()?,
            },
            EXPIRE => {
                let table = self.u32()?;
                let now_ms = self.u64()?;
                let count = self.u32()? as usize;
                // Each candidate takes at least 12 bytes: a count past that is damage
                if count > (self.body.len() - self.at) / 12 {
                    return Err("more expiry rows than the record has room for");
                }
                let mut candidates = Vec::with_capacity(count);
                for _ in 0..count {
                    candidates.push((self.u64()?, self.bytes()?));
                }
                Op::Expire {
                    table,
                    now_ms,
                    candidates,
                }
            }
            TABLE_ROW => Op::TableRow {
                name: self.str()?,
                id: self.u32()?,
                bytes: self.u64()?,
            },
            _ => return Err("an unknown op"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_op() -> Vec<Op<'static>> {
        vec![
            Op::Append {
                queue: 3,
                seq: 7,
                record: b"payload",
            },
            Op::Delete { queue: 3, seq: 6 },
            Op::DeleteRange {
                queue: 3,
                first: 0,
                last: 5,
            },
            Op::SetAside {
                name: "orders",
                seq: 2,
                bytes: b"\x00bad",
                reason: "fails its checksum",
                at: 1_700_000_000_000,
            },
            Op::DeclareQueue { name: "new", id: 9 },
            Op::RemoveQueue { name: "old", id: 1 },
            Op::QueueRow {
                name: "orders",
                id: 3,
                head: 8,
                bytes: 7,
            },
            Op::DeclareTable {
                name: "seen",
                id: 0,
            },
            Op::Put {
                table: 0,
                key: b"k",
                value: b"v",
                expires_at: u64::MAX,
            },
            Op::Remove {
                table: 0,
                key: b"gone",
            },
            Op::Expire {
                table: 0,
                now_ms: 99,
                candidates: vec![(10, b"a".as_slice()), (20, b"b".as_slice())],
            },
            Op::TableRow {
                name: "seen",
                id: 0,
                bytes: 2,
            },
        ]
    }

    #[test]
    fn every_op_decodes_to_what_was_encoded() {
        let ops = every_op();
        let mut body = Vec::new();
        ops.iter().for_each(|op| op.encode(&mut body));
        assert_eq!(decode(&body), Ok(ops));
    }

    #[test]
    fn a_body_cut_short_or_with_an_unknown_op_is_refused_not_read_past() {
        let mut body = Vec::new();
        every_op().iter().for_each(|op| op.encode(&mut body));
        for len in 0..body.len() {
            // Cut anywhere: either a whole prefix of ops, or an error; never a panic
            let _ = decode(&body[..len]);
        }
        assert!(decode(&[0xEE]).is_err());
        let mut huge = vec![EXPIRE];
        huge.extend_from_slice(&[0; 12]);
        huge.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode(&huge).is_err());
        let mut backwards = vec![DELETE_RANGE];
        backwards.extend_from_slice(&3u32.to_le_bytes());
        backwards.extend_from_slice(&9u64.to_le_bytes());
        backwards.extend_from_slice(&8u64.to_le_bytes());
        assert!(decode(&backwards).is_err());
    }
}
