//! # eip-store
//!
//! The embedded durable store under eip's durable channels (*Guaranteed Delivery*): named FIFO
//! queues of byte records in one data directory, with no server to run. It knows nothing of
//! eip's messages; `eip-core` encodes them to [`Bytes`](bytes::Bytes) and builds durable
//! channels on [`QueueLog`]. Beside the queues, named key tables ([`KeyTable`]) hold the state
//! of durable steps (an aggregator's groups, an idempotent receiver's seen keys), and an atomic
//! [`Batch`] commits acks, appends and key table changes together, all or nothing.
//!
//! ## Guarantees
//!
//! - **Durable appends.** An [`AppendTicket`] resolves `Ok(seq)` only once the round holding the
//!   record is fsynced (in the write-ahead journal, see below). After a crash (a killed process,
//!   a power loss) the store reopens with every record whose ticket resolved `Ok`, minus those
//!   whose ack was committed.
//! - **Durable key tables.** A [`KeyTable::put`] or [`KeyTable::remove`] ticket resolves only
//!   once the round holding it is fsynced; after a crash the table holds every change whose
//!   ticket resolved. An entry whose expiry has come reads as absent at once;
//!   [`KeyTable::expire`] deletes such entries, at most [`EXPIRE_LIMIT`] per commit.
//! - **Atomic batches.** A [`Batch`] (acks, appends, puts, removes) is written into ONE round
//!   (one transaction, one journal record): after a crash every effect of it is in the store or
//!   none is. Its [`BatchTicket`] resolves once that round is fsynced, so an ack in a batch is
//!   durable when the batch resolves. A
//!   batch that can not be committed whole (it would pass `max_bytes`, a queue of it was
//!   removed, a handle of another store, a failed commit) fails whole and changes nothing, in
//!   the file or in memory.
//! - **Group commit.** One committer thread writes every append, ack, batch and key table change
//!   queued since its last round in one redb write transaction and one journal record with one
//!   fdatasync; concurrent appenders share rounds ([`DurableStore::stats`] counts them as
//!   commits). Batches share them too, each still whole.
//! - **Lazy acks.** [`QueueLog::ack`] never waits: the deletion rides with the next round, or a
//!   timer commits it within a few milliseconds (without fsync). A lost ack is a redelivery after
//!   restart, never a lost record. [`DurableStore::flush`] and dropping the store make acks durable.
//! - **Sequence numbers** are per queue, start at 0, only grow, and survive restarts.
//! - **Bounded disk use.** [`StoreConfig::max_bytes`] bounds the bytes of live records (appended
//!   and not yet deleted by a committed ack) and of key tables' entries (key and value, put and
//!   not yet replaced, removed or expired). A put or a batch that would pass it fails at once,
//!   whole (a batch counts the records its acks delete as freed). An append that would pass it
//!   fails at once ([`QueueLog::append`]) or waits for acks up to [`StoreConfig::full_timeout`]
//!   ([`QueueLog::append_waiting`]), then fails with [`StoreError::Full`] naming the directory and
//!   the limit. A record once accepted is never dropped. The limit counts payloads only: the file
//!   also holds B-tree pages and free space (redb reuses freed pages but does not shrink the file),
//!   so it is larger than `max_bytes`: about twice the live bytes for records of 1 KiB.
//! - **One opener.** A second open of the same directory, from this process or another, fails
//!   with [`StoreError::InUse`] (an `flock` on `LOCK`, plus redb's own lock on the database).
//! - **No panic on file content.** A file that is not a store is [`StoreError::Foreign`], a
//!   store of another format [`StoreError::UnsupportedFormat`]; one that can not be opened
//!   (truncated, lost, its list of queues damaged) is [`StoreError::Damaged`]; each names the
//!   file. A panic of the storage engine on a damaged page is caught, without a backtrace.
//! - **Damage costs only what is damaged.** A read returns every intact record: one that fails
//!   its checksum is set aside into the quarantine ([`DurableStore::quarantined`]) with its
//!   bytes, a page that can not be read is read around ([`QueueLog::read_page`]), and both are
//!   counted ([`QueueLog::damage`]). [`check`] reports the damage of a closed store; [`salvage`]
//!   copies every intact record into a new one. A key table's entry that fails its own
//!   checksum is never returned: it reads as absent and is counted ([`KeyTable::damage`]); a
//!   page of a key table that can not be read costs only its entries ([`KeyTable::entries`]
//!   reads from both ends towards it). [`check`] names damaged entries too, and [`salvage`]
//!   copies every intact entry.
//! - **A failed write does not stop the store.** redb latches a write that failed (an I/O error,
//!   a full disk, a panic on a damaged page while it held a lock of its own): its handle refuses
//!   every later operation. The store then reopens the file, deletes again the acks a reopen may
//!   have lost, and tries the failed commit once more (a damaged record whose deletion failed
//!   stays in its table, passed over); a read that met the broken handle is run again on the
//!   new one. Reopens are at least a second apart, so a disk that stays full fails appends
//!   quickly instead of reopening in a loop; once room is made, appends succeed again. A batch
//!   is retried whole, or fails whole; so are key table changes.
//! - **Bounded memory.** Records and entries live on disk. In memory each queue keeps its head,
//!   length and live bytes, plus the acks not yet committed, and each key table its live bytes;
//!   redb's page cache is bounded by [`StoreConfig::cache_bytes`].
//!
//! ## Crashes and the journal
//!
//! Each round of the committer is written twice: as ONE record of a write-ahead journal (the
//! file `journal`: the round's changes with explicit values, a length and a CRC-32C), which is
//! fdatasynced, and into redb in a write transaction committed without an fsync. A ticket
//! resolves once the journal's fdatasync returned. Every so often (the journal passes
//! [`StoreConfig::journal_bytes`], the store is idle for 100 ms, at close, after a failure) a
//! *checkpoint* commits the database durably, with redb's quick repair, and starts the journal
//! over ([`StoreStats::checkpoints`] counts them). A window-1 send thus costs one write and one
//! fdatasync, and many concurrent sends share them.
//!
//! After a crash, redb opens at its last durable commit, a checkpoint, which records the
//! allocator state: it reads nothing else (no repair of the whole file). The open then reads the
//! round number that commit recorded and replays every intact journal record of a later round,
//! in order, through the same code that applied it the first time; then it makes a checkpoint
//! and starts the journal over. An open after a crash in the middle of traffic thus costs the
//! traffic since the last checkpoint, not the data waiting. A torn record at the journal's end
//! (the crash cut it) is where the replay stops; it was never acknowledged. A damaged record
//! followed by intact durable ones is damage: the store opens with the rounds before it, keeps
//! the journal as it was beside it (`journal.damaged.<round>`), logs it and reports it
//! ([`DurableStore::journal_damage`]). [`check`] and [`salvage`] read the journal too: they see
//! what an open would see, without changing the store (they replay into a copy).
//!
//! redb keeps two commit slots in its header and a "god byte" that names the current one; a
//! durable commit writes the new B-tree pages (copy on write, never over live pages), the new
//! root and its checksum into the inactive slot, flips the god byte and fsyncs. A crash thus
//! exposes either the whole last checkpoint or the one before it, never a part of one; and a
//! journal record is replayed whole or not at all.
//!
//! Between checkpoints, redb can not reuse the pages freed since the last durable commit, so the
//! database file can grow by about what the journal holds before it is reused; `journal_bytes`
//! bounds that.
//!
//! A batch is all or nothing for the same reason: it is never split between two rounds, and
//! the committer checks everything that could refuse part of it (a removed queue) before it
//! writes any of it, so what can still fail fails the whole transaction.
//!
//! redb verifies page checksums only in that repair. So that damage done to a cleanly closed
//! file is not read back as data, every record carries its own CRC-32C over queue, sequence
//! number and payload, and every key table entry one over table, key, expiry and value; a
//! record that fails it is set aside, an entry passed over, neither ever returned.
//!
//! ## Layout
//!
//! The data directory holds `LOCK`, `FORMAT`, `journal` and `store.redb`; the tables of `store.redb` are
//! one records table per queue (sequence number → record), a `queues` table (name → id, head,
//! live bytes), written together in each commit, and the `quarantine` of damaged records; and,
//! once a key table is declared, a `tables` table (name → id, live bytes) with an entries table
//! and an expiry index per key table (see `schema`). Those are created lazily, so a store
//! written before key tables existed opens unchanged. A store of format 1 (before the journal)
//! opens as one with an empty journal and is brought to format 2, which builds from before the
//! journal refuse: they would not replay it.
//!
//! ## Example
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), eip_store::StoreError> {
//! use bytes::Bytes;
//! use eip_store::{DurableStore, StoreConfig};
//!
//! let dir = std::env::temp_dir().join(format!("eip-store-doc-{}", std::process::id()));
//! # let _ = std::fs::remove_dir_all(&dir);
//! let store = DurableStore::open(&dir, StoreConfig::default())?;
//! let orders = store.queue("orders")?;
//! let seq = orders.append(Bytes::from_static(b"order 1"))?.await?;
//! assert_eq!(orders.read(0, 10)?, vec![(seq, Bytes::from_static(b"order 1"))]);
//!
//! // Move an order into a group and remember its key, in one commit
//! let next = orders.append(Bytes::from_static(b"order 2"))?.await?;
//! let group = store.queue("group-7")?;
//! let seen = store.table("seen")?;
//! let moved = store
//!     .batch()
//!     .ack(&orders, next)
//!     .append(&group, Bytes::from_static(b"order 2"))
//!     .put(&seen, "order-2", "", None)
//!     .commit()
//!     .await?;
//! assert_eq!(moved, vec![0]);
//! assert_eq!(seen.get(b"order-2")?, Some(Bytes::new()));
//! orders.ack(seq);
//! assert_eq!(orders.len(), 0);
//! drop((orders, group, seen, store));
//! # std::fs::remove_dir_all(&dir).ok();
//! # Ok(())
//! # }
//! ```

mod backend;
mod batch;
mod committer;
mod config;
mod error;
mod frame;
mod journal;
mod latency;
mod layout;
mod open;
mod quarantine;
mod queue;
mod quiet;
mod repair;
mod scan;
mod schema;
mod slot;
mod space;
mod store;
mod table;
#[cfg(test)]
mod test_support;
mod ticket;
mod unstored;

pub use batch::Batch;
pub use config::StoreConfig;
pub use error::StoreError;
pub use journal::JournalDamage;
pub use latency::{COMMIT_BUCKETS, CommitLatency};
pub use quarantine::QuarantinedRecord;
pub use queue::{Damage, QueueLog, ReadPage};
pub use repair::{QueueCheck, StoreCheck, TableCheck, check, salvage};
pub use store::{DurableStore, StoreStats};
pub use table::{EXPIRE_LIMIT, KeyTable, TableDamage};
pub use ticket::{AppendTicket, BatchTicket, Ticket};
