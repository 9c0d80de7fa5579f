//! The `runakefli` binary: `serve` runs the server; `query`, `labels`,
//! `series` and `push` talk to one; `bench` runs the benchmarks.

mod auth_cmd;
mod bench_cmd;
mod client;
mod rules_cmd;
mod serve;

use clap::{CommandFactory, Parser, Subcommand};

/// Rúnakefli — a Loki-compatible columnar log database.
#[derive(Parser, Debug)]
#[command(name = "runakefli", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the server (Loki push and query API on 127.0.0.1:3100 by default).
    Serve(Box<serve::args::ServeArgs>),
    /// Run a LogQL query against a server (logcli's query): range or instant, paginated.
    Query(client::query::QueryArgs),
    /// List label names, or the values of one label.
    Labels(client::query::LabelsArgs),
    /// List the streams matching selectors.
    Series(client::query::SeriesArgs),
    /// Push lines from standard input or files into a stream, batched.
    Push(client::push::PushArgs),
    /// Check rule files (promtool-like, LogQL-aware) or list a server's rules.
    #[command(subcommand)]
    Rules(rules_cmd::RulesCommand),
    /// Make secrets for the credentials file of `serve --auth-file`.
    #[command(subcommand)]
    Auth(auth_cmd::AuthCommand),
    /// Generate the reference workload and run benchmarks against a server.
    #[command(subcommand)]
    Bench(bench_cmd::BenchCommand),
}

fn main() -> anyhow::Result<()> {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let cli = Cli::parse_from(&argv);
    match cli.command {
        // Parsed again with the config file's settings under the flags.
        Command::Serve(_) => serve::run(argv, Cli::command()),
        Command::Query(a) => client::query::run(a),
        Command::Labels(a) => client::query::labels(a),
        Command::Series(a) => client::query::series(a),
        Command::Push(a) => client::push::run(a),
        Command::Bench(cmd) => bench_cmd::run(cmd),
        Command::Auth(cmd) => auth_cmd::run(cmd),
        Command::Rules(cmd) => rules_cmd::run(cmd),
    }
}
