//! The `eip` command-line tool: run, validate, draw and dry-run flow files.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
