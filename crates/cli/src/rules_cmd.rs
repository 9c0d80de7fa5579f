//! `runakefli rules`: `check FILE…` validates rule files as the server does
//! on load (YAML, Prometheus' rule checks, LogQL expressions, templates),
//! like `promtool check rules`; `list` prints a server's rule groups.

use crate::client::Target;
use anyhow::bail;
use clap::{Args, Subcommand};
use std::io::Write;
use std::path::PathBuf;

/// `runakefli rules …`.
#[derive(Subcommand, Debug)]
pub enum RulesCommand {
    /// Check rule files; exits 1 when any is invalid.
    Check(CheckArgs),
    /// Print the rule groups of a running server (GET /loki/api/v1/rules) as YAML.
    List(ListArgs),
}

/// `runakefli rules check`.
#[derive(Args, Debug)]
pub struct CheckArgs {
    /// Rule files (`groups:` YAML).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
}

/// `runakefli rules list`.
#[derive(Args, Debug)]
pub struct ListArgs {
    /// Only this namespace.
    pub namespace: Option<String>,
    #[command(flatten)]
    pub target: Target,
}

/// Runs a `rules` subcommand.
pub fn run(cmd: RulesCommand) -> anyhow::Result<()> {
    match cmd {
        RulesCommand::Check(a) => check(&a.files),
        RulesCommand::List(a) => {
            let path = match &a.namespace {
                Some(ns) => format!("/loki/api/v1/rules/{}", crate::client::query::urlencode(ns)),
                None => "/loki/api/v1/rules".to_string(),
            };
            let text = a.target.get_text(&path)?;
            std::io::stdout().lock().write_all(text.as_bytes())?;
            Ok(())
        }
    }
}

fn check(files: &[PathBuf]) -> anyhow::Result<()> {
    let mut bad = 0;
    let mut out = std::io::stdout().lock();
    for path in files {
        let checked = runakefli_ruler::store::read_file(path)
            .map_err(|e| vec![e.to_string()])
            .and_then(|f| {
                runakefli_ruler::validate::compile_groups(&f.groups, &Default::default())
                    .map_err(|errs| errs.iter().map(ToString::to_string).collect())
            });
        match checked {
            Ok(groups) => {
                let rules: usize = groups.iter().map(|g| g.rules.len()).sum();
                writeln!(
                    out,
                    "Checking {}\n  SUCCESS: {rules} rules found",
                    path.display()
                )?;
            }
            Err(errors) => {
                bad += 1;
                writeln!(out, "Checking {}\n  FAILED:", path.display())?;
                for e in errors {
                    writeln!(out, "{e}")?;
                }
            }
        }
    }
    if bad > 0 {
        bail!("{bad} of {} rule files invalid", files.len());
    }
    Ok(())
}
