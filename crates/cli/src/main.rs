//! The `runakefli` binary: `serve` runs the server; `bench` runs the benchmarks.

mod bench_cmd;
mod serve_cmd;

use clap::{Parser, Subcommand};

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
    Serve(serve_cmd::ServeArgs),
    /// Generate the reference workload and run benchmarks against a server.
    #[command(subcommand)]
    Bench(bench_cmd::BenchCommand),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(args) => serve_cmd::run(args),
        Command::Bench(cmd) => bench_cmd::run(cmd),
    }
}
