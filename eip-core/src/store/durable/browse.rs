//! Browsing a durable queue's records on disk: what a queue has not read into its window
//! yet, shown as it would be delivered, without reading it in.

use eip_store::QueueLog;

use super::codec;
use crate::log::Escaped;
use crate::store::Pager;

/// How many records one read of a browse takes from disk.
const BROWSE_BATCH: usize = 256;

/// Shows `pager` the records of `log` from `from` on, in order: those before `recovered`
/// (there when the store opened) marked redelivered, as a take would mark them. A damaged
/// record is handled as every read handles it ([`QueueLog::read_page`]); one that does not
/// decode is passed over (taking it sets it aside).
pub(super) fn from_disk(log: &QueueLog, mut from: u64, recovered: u64, pager: &mut Pager<'_>) {
    while !pager.is_done() && from < log.head() {
        let page = match log.read_page(from, BROWSE_BATCH) {
            Ok(page) => page,
            Err(error) => {
                tracing::error!(queue = log.name(), error = %Escaped(&error), "could not browse the durable queue");
                return;
            }
        };
        let skip = pager.skippable().min(page.records.len());
        pager.skipped(skip);
        for (seq, record) in page.records.iter().skip(skip) {
            if pager.is_done() {
                return;
            }
            if let Ok(mut msg) = codec::decode(record) {
                if *seq < recovered {
                    msg.mark_redelivered();
                }
                pager.see(&msg);
            }
        }
        if page.next <= from {
            return;
        }
        from = page.next;
    }
}
