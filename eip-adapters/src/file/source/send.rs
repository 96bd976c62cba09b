//! Sending a batch of files: each message once the channel has room, and for each file a
//! note of what becomes of it.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;

use eip_core::Message;
use eip_core::channel::SendError;
use tower::Service;

use super::claim::{Body, Claimed, Taken};
use super::read::{self, Line};
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
        let mut rejects = Vec::new();
        let mut reasons = Vec::new();
        let mut accepted = 0usize;
        let mut begun = false;
        for (n, line) in lines {
            match line {
                Line::Json(msg) => {
                    match self.ready(shutdown, settled).await {
                        Ok(Room::Now) => {}
                        Ok(Room::Waited) => *waited = true,
                        Ok(Room::Shutdown) if !begun => {
                            settled.push(Settle::Release(claimed));
                            return Flow::Shutdown;
                        }
                        // Part sent: it stays claimed, for the next run to send again.
                        Ok(Room::Shutdown) => return Flow::Shutdown,
                        Err(reason) => {
                            let note = format!("line {n}: ");
                            return failed_send(claimed, Failure::Closed(reason), note, settled);
                        }
                    }
                    if let Err(failure) = self.send(msg).await {
                        let note = format!("line {n} ({accepted} lines before it accepted): ");
                        return failed_send(claimed, failure, note, settled);
                    }
                    accepted += 1;
                    begun = true;
                }
                Line::Malformed { msg, reason } => {
                    let unplaced = match &self.invalid {
                        Some(invalid) => invalid.put(msg, &self.config.name, reason.clone()).await,
                        None => Err(msg),
                    };
                    if let Err(msg) = unplaced {
                        rejects.extend_from_slice(msg.payload());
                        rejects.push(b'\n');
                        reasons.push(reason);
                    }
                    begun = true;
                }
            }
        }
        if !rejects.is_empty() {
            settled.push(Settle::Rejects {
                claimed: claimed.clone(),
                lines: rejects,
                reasons: reasons.join("\n"),
            });
        }
        settled.push(Settle::Done(claimed));
        Flow::Go
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
