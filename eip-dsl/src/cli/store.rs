//! `eip store`: looking after a durable store's data directory while no flow has it open.
//!
//! - `eip store check DIR` reads every record of every queue, changing nothing, and prints per
//!   queue how many records it holds, how many are intact, which are damaged (sequence numbers)
//!   and which sequence numbers lie on pages that can not be read (and, if the queue's length
//!   says more than was found, how many are missing); then what the quarantine
//!   holds. Exit status 0 if nothing is damaged, 1 if something is, 2 if the store can not be
//!   read at all.
//! - `eip store salvage DIR [--into NEW_DIR]` copies every intact record into a new store
//!   (default `DIR.salvaged`), under the same queue names and sequence numbers, the damaged ones
//!   into its quarantine; `DIR` is left as it was. Exit status 0 once the new store is written.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Subcommand;
use eip_core::store::durable::{self, StoreCheck, StoreError};
use eip_dsl::compile::CompileError;

/// `eip store`'s own commands.
#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Reads every record of the store in DIR and reports what is damaged, changing nothing.
    /// Exit 0 if clean, 1 if damaged, 2 if the store can not be read.
    Check {
        /// The data directory.
        dir: PathBuf,
    },
    /// Copies every intact record of DIR into a new store, the damaged ones into its
    /// quarantine; DIR is left as it was.
    Salvage {
        /// The damaged data directory.
        dir: PathBuf,
        /// Where the new store goes; must not hold a store. Default: DIR.salvaged.
        #[arg(long)]
        into: Option<PathBuf>,
    },
}

/// Runs one `eip store` command.
pub fn store(command: StoreCommand) -> ExitCode {
    match command {
        StoreCommand::Check { dir } => match durable::check(&dir) {
            Ok(check) => {
                print!("{}", describe(&check));
                if check.is_clean() {
                    println!("clean");
                    ExitCode::SUCCESS
                } else {
                    println!(
                        "damaged: `eip store salvage {}` copies every intact record into a new store",
                        dir.display()
                    );
                    ExitCode::FAILURE
                }
            }
            Err(error) => unreadable(&error),
        },
        StoreCommand::Salvage { dir, into } => {
            let into = into.unwrap_or_else(|| salvaged_dir(&dir));
            match durable::salvage(&dir, &into) {
                Ok(check) => {
                    print!("{}", describe(&check));
                    println!(
                        "salvaged into {}; {} is unchanged. To use it: stop the flow, move {} \
                         away, move {} in its place, start the flow.",
                        into.display(),
                        dir.display(),
                        dir.display(),
                        into.display()
                    );
                    ExitCode::SUCCESS
                }
                Err(error) => unreadable(&error),
            }
        }
    }
}

/// `DIR.salvaged`, beside `DIR`.
fn salvaged_dir(dir: &Path) -> PathBuf {
    let mut name = OsString::from(dir.as_os_str());
    name.push(".salvaged");
    PathBuf::from(name)
}

fn unreadable(error: &StoreError) -> ExitCode {
    eprintln!("error: {error}");
    ExitCode::from(2)
}

/// What a check found: the journal, one line per queue, then the quarantine.
fn describe(check: &StoreCheck) -> String {
    let mut out = format!("store {}\n", check.file.display());
    if check.journal_rounds > 0 {
        out.push_str(&format!(
            "journal: {} round(s) not yet in the database file (the store was not closed \
             cleanly), read from the journal; the next open replays them\n",
            check.journal_rounds
        ));
    }
    if let Some(damage) = &check.journal_damage {
        out.push_str(&format!(
            "journal: {damage}; {} later round(s) were not read\n",
            damage.later
        ));
    }
    for queue in &check.queues {
        let records = queue
            .records
            .map_or_else(|| "? records".to_string(), |n| format!("{n} records"));
        let damaged = if queue.damaged.is_empty() {
            "none".to_string()
        } else {
            queue
                .damaged
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        let unreadable = if queue.unreadable.is_empty() {
            "none".to_string()
        } else {
            queue
                .unreadable
                .iter()
                .map(|r| format!("{}..={}", r.start(), r.end()))
                .collect::<Vec<_>>()
                .join(", ")
        };
        out.push_str(&format!(
            "queue {:?}: {records}, {} intact, damaged: {damaged}, unreadable: {unreadable}",
            queue.name, queue.intact
        ));
        if queue.missing > 0 {
            out.push_str(&format!(", missing: {}", queue.missing));
        }
        out.push('\n');
    }
    out.push_str(&format!(
        "quarantine: {} record(s) set aside\n",
        check.quarantined.len()
    ));
    for record in &check.quarantined {
        out.push_str(&format!(
            "  {:?} {}: {} bytes, {}\n",
            record.queue,
            record.seq,
            record.bytes.len(),
            record.reason
        ));
    }
    out
}

/// For a flow whose store could not be opened because of what is in it: what to run next.
pub fn hint(error: &CompileError) -> Option<String> {
    let CompileError::Store { dir, source } = error else {
        return None;
    };
    let about_content = source.is_damage()
        || matches!(
            source,
            StoreError::Foreign { .. } | StoreError::UnsupportedFormat { .. }
        );
    about_content.then(|| {
        format!(
            "hint: `eip store check {dir}` says what is damaged; `eip store salvage {dir}` \
             copies every intact record into a new store (the directory is left as it is)",
            dir = dir.display()
        )
    })
}
