//! `eip route`: a dry run per input line.

use std::io::{BufRead, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use eip_dsl::compile::InputMessage;

#[derive(Debug, Args)]
pub struct RouteArgs {
    /// The flow file.
    flow: PathBuf,
    /// Read the messages from this file instead of standard input (`-` is standard input too,
    /// as for `eip run`).
    #[arg(long, short)]
    input: Option<PathBuf>,
    /// Also say what each route step made of the message (`steps` in the answer): its
    /// payload and headers after a transform, nothing after a filter that held it back.
    #[arg(long)]
    steps: bool,
}

pub fn route(args: RouteArgs) -> ExitCode {
    let Some(flow) = super::compile_flow(&args.flow) else {
        return ExitCode::FAILURE;
    };
    let from_file = args.input.as_ref().filter(|path| path.as_os_str() != "-");
    let input: Box<dyn BufRead> = match from_file {
        None => Box::new(std::io::stdin().lock()),
        Some(path) => match std::fs::File::open(path) {
            Ok(file) => Box::new(std::io::BufReader::new(file)),
            Err(e) => {
                eprintln!("error: could not read {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
        },
    };
    let mut out = BufWriter::new(std::io::stdout().lock());
    for (n, line) in input.lines().enumerate() {
        let line = match line {
            Ok(line) => line,
            Err(e) => {
                eprintln!("error: reading line {}: {e}", n + 1);
                return ExitCode::FAILURE;
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        let answer = match InputMessage::parse(&line) {
            Err(e) => error_line(n + 1, &e.to_string()),
            Ok(input) => match match args.steps {
                true => flow.dry_run_steps(&input),
                false => flow.dry_run(&input),
            } {
                Ok(report) => serde_json::to_string(&report)
                    .unwrap_or_else(|e| error_line(n + 1, &e.to_string())),
                Err(e) => error_line(n + 1, &e.to_string()),
            },
        };
        if writeln!(out, "{answer}").is_err() {
            // Standard output is closed (a pipe's reader left): nothing more to say.
            return ExitCode::SUCCESS;
        }
    }
    match out.flush() {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::SUCCESS,
    }
}

/// The answer for an input line that could not be routed.
fn error_line(line: usize, error: &str) -> String {
    serde_json::json!({ "error": format!("line {line}: {error}") }).to_string()
}
