//! Sending a batch of files: each message once the channel has room, and for each file a
//! note of what becomes of it.

use std::future::Future;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::pin::Pin;

use eip_core::Message;
use eip_core::channel::SendError;
use eip_core::message::DeathReason;
use tower::Service;

use super::claim::{Body, Claimed, Taken};
use super::read;
use super::records::{self, Batch, Record};
use super::settle::Settle;
use super::{BoxError, FileSource, Room};
use crate::file::FileError;

/// What sending a file leaves the loop to do.
pub(super) enum Flow {
    Go,
    Shutdown,
    Stop(FileError),
}

/// Why a send failed: the channel is closed (the adapter stops), or it refused this message.
enum Failure {
    Closed(String),
    Refused(String),
}

impl<S> FileSource<S>
where
    S: Service<Message> + Send + 'static,
    S::Future: Send,
    S::Error: Into<BoxError>,
{
    async fn send(&mut self, msg: Message) -> Result<(), Failure> {
        self.sender.call(msg).await.map(drop).map_err(|e| {
            let e: BoxError = e.into();
            match e.downcast_ref::<SendError>() {
                Some(SendError::Closed { .. }) => Failure::Closed(e.to_string()),
                _ => Failure::Refused(e.to_string()),
            }
        })
    }

    /// Sends the messages of a batch in order, noting in `settled` what becomes of each file
    /// (those not reached when the loop stops go back); also says whether the channel made
    /// the adapter wait for room.
    pub(super) async fn send_batch<F: Future<Output = ()>>(
        &mut self,
        taken: Vec<Taken>,
        settled: &mut Vec<Settle>,
        shutdown: &mut Pin<&mut F>,
    ) -> (Flow, bool) {
        let mut waited = false;
        let mut files = taken.into_iter();
        let mut flow = Flow::Go;
        for file in files.by_ref() {
            flow = self.send_file(file, settled, &mut waited, shutdown).await;
            if !matches!(flow, Flow::Go) {
                break;
            }
        }
        settled.extend(files.map(|file| Settle::Release(file.claimed)));
        (flow, waited)
    }

    /// Sends one file's messages, each once the channel has room, and notes in `settled` what
    /// becomes of the file.
    async fn send_file<F: Future<Output = ()>>(
        &mut self,
        file: Taken,
        settled: &mut Vec<Settle>,
        waited: &mut bool,
        shutdown: &mut Pin<&mut F>,
    ) -> Flow {
        let Taken { claimed, body } = file;
        let body = match body {
            Ok(body) => body,
            Err(error) => {
                let reason = error.to_string();
                settled.push(Settle::Failed { claimed, reason });
                return Flow::Go;
            }
        };
        match body {
            Body::Whole(msg) => {
                match self.ready(shutdown, settled).await {
                    Ok(Room::Now) => {}
                    Ok(Room::Waited) => *waited = true,
                    Ok(Room::Shutdown) => {
                        settled.push(Settle::Release(claimed));
                        return Flow::Shutdown;
                    }
                    Err(reason) => {
                        return failed_send(
                            claimed,
                            Failure::Closed(reason),
                            String::new(),
                            settled,
                        );
                    }
                }
                match self.send(msg).await {
                    Ok(()) => {
                        settled.push(Settle::Done(claimed));
                        Flow::Go
                    }
                    Err(failure) => failed_send(claimed, failure, String::new(), settled),
                }
            }
            Body::Lines(contents) => {
                self.send_lines(claimed, contents, settled, waited, shutdown)
                    .await
            }
            Body::Stream(opened) => {
                self.send_stream(claimed, opened, settled, waited, shutdown)
                    .await
            }
        }
    }

    /// Sends a JSON-lines file line by line, waiting for room before each.
    async fn send_lines<F: Future<Output = ()>>(
        &mut self,
        claimed: Claimed,
        contents: read::Contents,
        settled: &mut Vec<Settle>,
        waited: &mut bool,
        shutdown: &mut Pin<&mut F>,
    ) -> Flow {
        let name = claimed.name.clone();
        let lines = match contents.json_lines(&name, &claimed.path) {
            Ok(lines) => lines,
            Err(error) => {
                let reason = error.to_string();
                settled.push(Settle::Failed { claimed, reason });
                return Flow::Go;
            }
        };
        let mut progress = Progress::default();
        for (n, line) in lines {
            let sent = self
                .send_record(
                    line,
                    Some(n),
                    &claimed,
                    &mut progress,
                    settled,
                    waited,
                    shutdown,
                )
                .await;
            if let ControlFlow::Break(flow) = sent {
                return flow;
            }
        }
        progress.settle(claimed, settled);
        Flow::Go
    }

    /// Streams a file in the adapter's record format: read chunk by chunk on a blocking
    /// thread, each record sent once the channel has room, as it comes.
    async fn send_stream<F: Future<Output = ()>>(
        &mut self,
        claimed: Claimed,
        opened: read::Opened,
        settled: &mut Vec<Settle>,
        waited: &mut bool,
        shutdown: &mut Pin<&mut F>,
    ) -> Flow {
        let Some(format) = self.config.records.clone() else {
            let reason = "streamed without a record format".to_owned();
            settled.push(Settle::Failed { claimed, reason });
            return Flow::Go;
        };
        let file = opened.at_open.file_message(&claimed.name);
        let splitter = format.0.splitter(&file);
        let mut batches = records::start(opened, claimed.path.clone(), splitter);
        let mut progress = Progress::default();
        loop {
            match batches.recv().await {
                Some(Batch::Records(records)) => {
                    for record in records {
                        let sent = self
                            .send_record(
                                record,
                                None,
                                &claimed,
                                &mut progress,
                                settled,
                                waited,
                                shutdown,
                            )
                            .await;
                        if let ControlFlow::Break(flow) = sent {
                            return flow;
                        }
                    }
                }
                Some(Batch::End(Ok(()))) => break,
                Some(Batch::End(Err(error))) => {
                    let reason =
                        format!("{error} ({} records before it accepted)", progress.accepted);
                    settled.push(Settle::Failed { claimed, reason });
                    return Flow::Go;
                }
                None => {
                    let reason = format!(
                        "the reading thread stopped before the end of the file ({} records \
                         accepted)",
                        progress.accepted
                    );
                    settled.push(Settle::Failed { claimed, reason });
                    return Flow::Go;
                }
            }
        }
        progress.settle(claimed, settled);
        Flow::Go
    }

    /// Sends one record of a file (line `line` of a JSON-lines file, or the next record of a
    /// streamed one) once the channel has room, or puts a malformed one in the invalid message
    /// channel (or else the dead letter channel, or else among the file's rejects). Breaks with how the loop goes on when the file
    /// can not go on: shut down, or the send failed (the file is then noted as failed).
    #[allow(clippy::too_many_arguments)]
    async fn send_record<F: Future<Output = ()>>(
        &mut self,
        record: Record,
        line: Option<usize>,
        claimed: &Claimed,
        progress: &mut Progress,
        settled: &mut Vec<Settle>,
        waited: &mut bool,
        shutdown: &mut Pin<&mut F>,
    ) -> ControlFlow<Flow> {
        let place = |accepted: usize| match line {
            Some(n) => format!("line {n}"),
            None => format!("record {}", accepted + 1),
        };
        match record {
            Record::Part(msg) => {
                match self.ready(shutdown, settled).await {
                    Ok(Room::Now) => {}
                    Ok(Room::Waited) => *waited = true,
                    Ok(Room::Shutdown) if !progress.begun => {
                        settled.push(Settle::Release(claimed.clone()));
                        return ControlFlow::Break(Flow::Shutdown);
                    }
                    // Part sent: it stays claimed, for the next run to send again.
                    Ok(Room::Shutdown) => return ControlFlow::Break(Flow::Shutdown),
                    Err(reason) => {
                        let note = format!("{}: ", place(progress.accepted));
                        let failure = Failure::Closed(reason);
                        return ControlFlow::Break(failed_send(
                            claimed.clone(),
                            failure,
                            note,
                            settled,
                        ));
                    }
                }
                if let Err(failure) = self.send(msg).await {
                    let accepted = progress.accepted;
                    let note = format!("{} ({accepted} before it accepted): ", place(accepted));
                    return ControlFlow::Break(failed_send(
                        claimed.clone(),
                        failure,
                        note,
                        settled,
                    ));
                }
                progress.accepted += 1;
                progress.begun = true;
            }
            Record::Malformed { message, reason } => {
                let origin = &self.config.name;
                let unplaced = match (&self.invalid, &self.dead_letters) {
                    (Some(invalid), _) => invalid.put(message, origin, reason.clone()).await,
                    (None, Some(dead_letters)) => {
                        let error = Some(reason.clone());
                        dead_letters
                            .bury(message, origin, DeathReason::Invalid, error)
                            .await
                    }
                    (None, None) => Err(message),
                };
                if let Err(message) = unplaced {
                    progress.rejects.add(message.payload(), reason);
                }
                progress.begun = true;
            }
        }
        ControlFlow::Continue(())
    }
}

/// How far the records of a file got.
#[derive(Default)]
struct Progress {
    /// Records the channel accepted.
    accepted: usize,
    /// Whether anything of the file was sent (or put aside): it can no longer go back.
    begun: bool,
    rejects: Rejects,
}

impl Progress {
    /// Every record was handled: the file is done, its rejects (if any) written beside.
    fn settle(self, claimed: Claimed, settled: &mut Vec<Settle>) {
        if let Some((lines, reasons)) = self.rejects.into_parts() {
            settled.push(Settle::Rejects {
                claimed: claimed.clone(),
                lines,
                reasons,
            });
        }
        settled.push(Settle::Done(claimed));
    }
}

/// The most bytes of malformed records kept for the error directory (1 MiB): a streamed file
/// of any size holds no more than this of its rejects; past it they are counted only.
const MAX_REJECT_BYTES: usize = 1 << 20;

/// Malformed records with no invalid message channel to go to, for the error directory.
#[derive(Default)]
struct Rejects {
    lines: Vec<u8>,
    reasons: Vec<String>,
    /// Rejects past [`MAX_REJECT_BYTES`], counted only.
    dropped: usize,
}

impl Rejects {
    fn add(&mut self, record: &[u8], reason: String) {
        if self.lines.len() + record.len() + 1 > MAX_REJECT_BYTES {
            self.dropped += 1;
            return;
        }
        self.lines.extend_from_slice(record);
        self.lines.push(b'\n');
        self.reasons.push(reason);
    }

    /// The records and their reasons, one a line, if there were any.
    fn into_parts(mut self) -> Option<(Vec<u8>, String)> {
        if self.dropped > 0 {
            self.reasons.push(format!(
                "{} more malformed records not kept (past {MAX_REJECT_BYTES} bytes)",
                self.dropped
            ));
        }
        (!self.reasons.is_empty()).then(|| (self.lines, self.reasons.join("\n")))
    }
}

/// Notes a file whose send failed for the error directory; a closed channel stops the loop.
fn failed_send(
    claimed: Claimed,
    failure: Failure,
    note: String,
    settled: &mut Vec<Settle>,
) -> Flow {
    match failure {
        Failure::Refused(reason) => {
            settled.push(Settle::Failed {
                claimed,
                reason: format!("{note}{reason}"),
            });
            Flow::Go
        }
        Failure::Closed(reason) => {
            let path = claimed.path.clone();
            settled.push(Settle::Failed {
                claimed,
                reason: format!("{note}{reason}"),
            });
            Flow::Stop(closed(path, reason))
        }
    }
}

pub(super) fn closed(path: PathBuf, reason: String) -> FileError {
    FileError::ChannelClosed { path, reason }
}
