//! Project automation: `cargo xtask <command>`.
//!
//! - `setup`: install the pinned .NET runtime and the C# compiler the tests use.
//! - `test`: setup, then formatting, lints, the whole test suite and a Windows type check.
//! - `demo`: run the bundled demo (not yet implemented).

mod demo;
mod setup;
mod test;
mod util;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "cargo xtask",
    bin_name = "cargo xtask",
    about = "clrprof project automation",
    version
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Install the pinned CoreCLR runtime and the `mcs` C# compiler (idempotent).
    Setup,
    /// Run setup, fmt, clippy, the test suite and the Windows check; stops at the first failure.
    Test {
        /// Extra arguments appended to `cargo test --workspace` (e.g. a test name, `-- --nocapture`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Profile the bundled demo program.
    Demo,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Setup => setup::run(),
        Command::Test { args } => test::run(&args),
        Command::Demo => demo::run(),
    };
    // Printed by hand rather than returned: `RUST_BACKTRACE=1` would make anyhow append a
    // backtrace of xtask itself, which only hides the message.
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
