//! `eip`'s commands. Each loads the flow file the same way (every problem reported with its
//! position, exit status 1), then does its one job.

#[cfg(feature = "admin")]
mod admin;
#[cfg(feature = "admin")]
mod dead_letters;
mod log;
mod reload;
mod route;
mod run;
mod store;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use eip_dsl::compile::{CompileError, Flow};
use eip_dsl::diagnostic::FlowErrors;
use eip_dsl::graph::Format;
use eip_dsl::load;
use eip_dsl::plan::Plan;

/// Enterprise Integration Patterns in Rust: run, check, draw and dry-run flow files.
#[derive(Debug, Parser)]
#[command(name = "eip", version, about, propagate_version = true)]
struct Cli {
    /// More log output: -v info, -vv debug, -vvv trace (RUST_LOG, if set, wins).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Runs a flow until its input ends or SIGINT/SIGTERM, then drains and exits.
    Run(run::RunArgs),
    /// Checks a flow file: exit 0, or every problem with its position and a non-zero exit.
    Validate {
        /// The flow file.
        flow: PathBuf,
    },
    /// Draws a flow: channels, routes, joins with their hop counts, exchanges and bindings.
    Graph {
        /// The flow file.
        flow: PathBuf,
        /// The picture's format.
        #[arg(long, short, default_value = "dot")]
        format: Format,
        /// Where to write it (default: standard output).
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// Where would each message go? Reads JSON lines, prints one JSON line per input.
    Route(route::RouteArgs),
    /// Checks a durable store's data directory for damage, or salvages it into a new one.
    #[command(subcommand)]
    Store(store::StoreCommand),
    /// A running flow's channels and their counters, from its admin server.
    #[cfg(feature = "admin")]
    Channels {
        #[command(flatten)]
        server: admin::Server,
    },
    /// A running flow's joins: list them, add one, remove one added at runtime.
    #[cfg(feature = "admin")]
    Joins {
        #[command(flatten)]
        server: admin::Server,
        #[command(subcommand)]
        command: admin::JoinsCommand,
    },
    /// A running flow's exchanges' bindings: list them, add one, remove one added at runtime.
    #[cfg(feature = "admin")]
    Bindings {
        #[command(flatten)]
        server: admin::Server,
        #[command(subcommand)]
        command: admin::BindingsCommand,
    },
    /// Removes the messages waiting on a channel of a running flow (the Channel Purger).
    #[cfg(feature = "admin")]
    Purge {
        #[command(flatten)]
        server: admin::Server,
        /// The channel.
        channel: String,
        /// Only the messages this predicate selects.
        #[arg(long)]
        when: Option<String>,
    },
    /// The messages waiting on a channel of a running flow, without taking them.
    #[cfg(feature = "admin")]
    Messages {
        #[command(flatten)]
        server: admin::Server,
        /// The channel.
        channel: String,
        #[command(flatten)]
        page: dead_letters::Page,
    },
    /// A running flow's dead letters: list them, replay them (keeping their ids), delete them.
    #[cfg(feature = "admin")]
    DeadLetters {
        #[command(flatten)]
        server: admin::Server,
        /// Another dead letter channel than `dead-letters`.
        #[arg(long, global = true)]
        channel: Option<String>,
        #[command(subcommand)]
        command: dead_letters::DeadLettersCommand,
    },
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    log::init(cli.verbose);
    match cli.command {
        Command::Run(args) => run::run(args),
        Command::Validate { flow } => match load_flow(&flow) {
            Some(_) => {
                println!("{}: ok", flow.display());
                ExitCode::SUCCESS
            }
            None => ExitCode::FAILURE,
        },
        Command::Graph {
            flow,
            format,
            output,
        } => {
            let Some(plan) = load_flow(&flow) else {
                return ExitCode::FAILURE;
            };
            let picture = eip_dsl::graph::render(&plan, format);
            match output {
                None => {
                    print!("{picture}");
                    ExitCode::SUCCESS
                }
                Some(path) => match std::fs::write(&path, picture) {
                    Ok(()) => ExitCode::SUCCESS,
                    Err(e) => {
                        eprintln!("error: could not write {}: {e}", path.display());
                        ExitCode::FAILURE
                    }
                },
            }
        }
        Command::Route(args) => route::route(args),
        Command::Store(command) => store::store(command),
        #[cfg(feature = "admin")]
        Command::Channels { server } => admin::channels(server),
        #[cfg(feature = "admin")]
        Command::Joins { server, command } => admin::joins(server, command),
        #[cfg(feature = "admin")]
        Command::Bindings { server, command } => admin::bindings(server, command),
        #[cfg(feature = "admin")]
        Command::Purge {
            server,
            channel,
            when,
        } => admin::purge(server, channel, when),
        #[cfg(feature = "admin")]
        Command::Messages {
            server,
            channel,
            page,
        } => dead_letters::messages(server, channel, page),
        #[cfg(feature = "admin")]
        Command::DeadLetters {
            server,
            channel,
            command,
        } => dead_letters::dead_letters(server, channel, command),
    }
}

/// Reads and checks a flow file, printing every problem to standard error.
fn load_flow(path: &Path) -> Option<Plan> {
    match load::load_file(path) {
        Ok(plan) => Some(plan),
        Err(errors) => {
            eprint!("{}", report(&errors));
            None
        }
    }
}

/// Reads, checks and compiles a flow file, printing what went wrong to standard error.
fn compile_flow(path: &Path) -> Option<Flow> {
    let plan = load_flow(path)?;
    compiled(eip_dsl::compile::compile(&plan))
}

/// The compiled flow, or `None` after printing why there is none.
fn compiled(result: Result<Flow, CompileError>) -> Option<Flow> {
    result
        .map_err(|e| {
            eprintln!("error: {}", eip_core::log::Escaped(&e));
            if let Some(hint) = store::hint(&e) {
                eprintln!("{hint}");
            }
        })
        .ok()
}

/// The problems of a flow as miette draws them: in colour on a terminal, plain otherwise.
/// Should drawing fail, the crate's own plain rendering says the same.
fn report(errors: &FlowErrors) -> String {
    use std::io::IsTerminal;
    // On a terminal: colour, wrapped to a readable width. Elsewhere (a file, a pipe, CI
    // logs): no colour, and one line per sentence so that the text can be searched.
    let (theme, width) = if std::io::stderr().is_terminal() {
        (miette::GraphicalTheme::unicode(), 100)
    } else {
        (miette::GraphicalTheme::unicode_nocolor(), 10_000)
    };
    let handler = miette::GraphicalReportHandler::new_themed(theme).with_width(width);
    let named = Named {
        errors,
        source: errors
            .source
            .clone()
            .map(|text| miette::NamedSource::new(errors.name.clone(), text)),
    };
    let mut out = String::new();
    match handler.render_report(&mut out, &named) {
        Ok(()) => out,
        Err(_) => errors.render(),
    }
}

/// A flow's problems with the file's name on the snippets.
#[derive(Debug)]
struct Named<'a> {
    errors: &'a FlowErrors,
    source: Option<miette::NamedSource<String>>,
}

impl std::fmt::Display for Named<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self.errors, f)
    }
}

impl std::error::Error for Named<'_> {}

impl miette::Diagnostic for Named<'_> {
    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        self.source.as_ref().map(|s| s as &dyn miette::SourceCode)
    }

    fn related<'a>(&'a self) -> Option<Box<dyn Iterator<Item = &'a dyn miette::Diagnostic> + 'a>> {
        self.errors.related()
    }
}
