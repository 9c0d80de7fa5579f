//! The YAML config file of `runakefli serve` and `--print-config`.
//!
//! Keys are the flag names with underscores, values what the flag takes
//! (`max_line_bytes: 256KiB`, `retention_period: 30d`, lists for repeatable
//! flags). Each key becomes its flag unless the flag or its variable is set,
//! so precedence is: flag, then `RUNAKEFLI_*` variable, then file, then
//! default; every value goes through the flag's own parser. One key has no
//! flag: `overrides:` holds per-tenant settings (Loki's runtime overrides):
//!
//! ```yaml
//! overrides:
//!   team-a:
//!     retention_period: 90d
//!     retention_stream:
//!       - { selector: '{env="dev"}', priority: 1, period: 1d }
//! ```

use super::args::{duration, retention_stream};
use anyhow::{bail, Context};
use clap::parser::ValueSource;
use clap::{ArgAction, ArgMatches, Command};
use runakefli_server::config::{RetentionStream, TenantOverrides};
use runakefli_server::units::format_duration;
use serde_yaml::{Mapping, Value};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;

/// Settings that never come from the file.
const NOT_IN_FILE: &[&str] = &["config_file", "print_config", "help", "version"];

/// Settings `--print-config` leaves out (printed as null): secrets.
const SECRETS: &[&str] = &[
    "clickhouse_password",
    "remote_write_password",
    "remote_write_bearer_token",
];

/// What the file adds to the command line.
#[derive(Debug, Default)]
pub struct FileSettings {
    /// Flags (`--name=value`) for keys whose flag was not given.
    pub flags: Vec<OsString>,
    /// Per-tenant overrides.
    pub overrides: BTreeMap<String, TenantOverrides>,
}

/// A scalar YAML value as flag text.
fn scalar(v: &Value, key: &str) -> anyhow::Result<String> {
    Ok(match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        _ => bail!("setting {key}: expected a single value"),
    })
}

/// A `retention_stream` item: `{selector, priority, period}` or the flag's
/// `SELECTOR:PERIOD[:PRIORITY]` text.
fn stream_rule(v: &Value, key: &str) -> anyhow::Result<String> {
    let Value::Mapping(m) = v else {
        return scalar(v, key);
    };
    let get = |k: &str| m.get(Value::String(k.into()));
    for k in m.keys() {
        let k = k.as_str().unwrap_or("");
        if !["selector", "priority", "period"].contains(&k) {
            bail!("setting {key}: unknown field {k:?} (selector, priority, period)");
        }
    }
    let selector = get("selector")
        .and_then(Value::as_str)
        .with_context(|| format!("setting {key}: selector missing"))?;
    let period = scalar(
        get("period").with_context(|| format!("setting {key}: period missing"))?,
        key,
    )?;
    let priority = get("priority").map_or(Ok("0".to_string()), |p| scalar(p, key))?;
    Ok(format!("{selector}:{period}:{priority}"))
}

/// A non-negative number setting.
fn number(v: &Value, key: &str) -> anyhow::Result<f64> {
    let n: f64 = scalar(v, key)?
        .parse()
        .map_err(|_| anyhow::anyhow!("{key}: expected a number"))?;
    if !n.is_finite() || n < 0.0 {
        bail!("{key}: expected a number of at least 0");
    }
    Ok(n)
}

fn parse_overrides(v: &Value) -> anyhow::Result<BTreeMap<String, TenantOverrides>> {
    let Value::Mapping(tenants) = v else {
        bail!("overrides: expected a map of tenant ids");
    };
    let mut out = BTreeMap::new();
    for (tenant, settings) in tenants {
        let tenant = scalar(tenant, "overrides")?;
        let Value::Mapping(settings) = settings else {
            bail!("overrides.{tenant}: expected a map of settings");
        };
        let mut o = TenantOverrides::default();
        for (k, v) in settings {
            let k = k.as_str().unwrap_or("");
            let key = format!("overrides.{tenant}.{k}");
            match k {
                "retention_period" => {
                    o.retention_period =
                        Some(duration(&scalar(v, &key)?).map_err(anyhow::Error::msg)?)
                }
                "retention_stream" => {
                    let Value::Sequence(items) = v else {
                        bail!("{key}: expected a list");
                    };
                    let mut rules = Vec::new();
                    for item in items {
                        rules.push(
                            retention_stream(&stream_rule(item, &key)?)
                                .map_err(anyhow::Error::msg)?,
                        );
                    }
                    o.retention_stream = Some(rules);
                }
                "ingestion_rate_mb" => o.ingestion_rate_mb = Some(number(v, &key)?),
                "ingestion_burst_size_mb" => o.ingestion_burst_size_mb = Some(number(v, &key)?),
                "max_global_streams_per_user" => {
                    o.max_global_streams_per_user = Some(number(v, &key)? as usize)
                }
                _ => bail!(
                    "{key}: unknown setting (retention_period, retention_stream, ingestion_rate_mb, ingestion_burst_size_mb, max_global_streams_per_user)"
                ),
            }
        }
        out.insert(tenant, o);
    }
    Ok(out)
}

/// Reads `path` against the `serve` command and what its command line set.
pub fn load(path: &Path, cmd: &Command, matches: &ArgMatches) -> anyhow::Result<FileSettings> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading config file {}", path.display()))?;
    let doc: Value = serde_yaml::from_str(&text)
        .with_context(|| format!("parsing config file {}", path.display()))?;
    let map = match doc {
        Value::Mapping(m) => m,
        Value::Null => Mapping::new(),
        _ => bail!("config file {}: expected a map of settings", path.display()),
    };
    let mut out = FileSettings::default();
    for (k, v) in &map {
        let key = k.as_str().unwrap_or("").to_string();
        if key == "overrides" {
            out.overrides =
                parse_overrides(v).with_context(|| format!("config file {}", path.display()))?;
            continue;
        }
        let arg = cmd
            .get_arguments()
            .find(|a| a.get_id() == key.as_str() && !NOT_IN_FILE.contains(&key.as_str()))
            .with_context(|| {
                format!(
                    "config file {}: unknown setting {key:?} (see runakefli serve --print-config)",
                    path.display()
                )
            })?;
        if matches!(
            matches.value_source(&key),
            Some(ValueSource::CommandLine | ValueSource::EnvVariable)
        ) {
            continue;
        }
        let long = arg.get_long().expect("every serve setting has a long flag");
        let values: Vec<String> = match v {
            Value::Null => continue,
            Value::Sequence(items) => items
                .iter()
                .map(|i| {
                    if key == "retention_stream" {
                        stream_rule(i, &key)
                    } else {
                        scalar(i, &key)
                    }
                })
                .collect::<anyhow::Result<_>>()?,
            Value::Mapping(_) if key == "retention_stream" => vec![stream_rule(v, &key)?],
            v => vec![scalar(v, &key)?],
        };
        for value in values {
            if matches!(arg.get_action(), ArgAction::SetTrue) {
                match value.as_str() {
                    "true" => out.flags.push(format!("--{long}").into()),
                    "false" => {}
                    _ => bail!("setting {key}: expected true or false"),
                }
            } else {
                out.flags.push(format!("--{long}={value}").into());
            }
        }
    }
    Ok(out)
}

/// The effective settings as a config file: every flag's value as given
/// (or its default; secrets such as `clickhouse_password` as null), and the
/// per-tenant overrides.
pub fn print(
    cmd: &Command,
    matches: &ArgMatches,
    overrides: &BTreeMap<String, TenantOverrides>,
) -> String {
    let mut map = Mapping::new();
    for arg in cmd.get_arguments() {
        let id = arg.get_id().as_str();
        if NOT_IN_FILE.contains(&id) {
            continue;
        }
        let raw: Vec<String> = matches
            .get_raw(id)
            .map(|vals| vals.map(|v| v.to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        let value = match (raw.len(), arg.get_num_args()) {
            _ if matches!(arg.get_action(), ArgAction::Append) => {
                Value::Sequence(raw.into_iter().map(Value::String).collect())
            }
            (0, _) => Value::Null,
            _ if SECRETS.contains(&id) => Value::Null,
            _ => yaml_scalar(&raw[0]),
        };
        map.insert(Value::String(id.to_string()), value);
    }
    let mut ov = Mapping::new();
    for (tenant, o) in overrides {
        let mut m = Mapping::new();
        if let Some(p) = o.retention_period {
            m.insert("retention_period".into(), format_duration(p).into());
        }
        if let Some(rules) = &o.retention_stream {
            m.insert(
                "retention_stream".into(),
                Value::Sequence(rules.iter().map(rule_yaml).collect()),
            );
        }
        if let Some(r) = o.ingestion_rate_mb {
            m.insert("ingestion_rate_mb".into(), r.to_string().into());
        }
        if let Some(b) = o.ingestion_burst_size_mb {
            m.insert("ingestion_burst_size_mb".into(), b.to_string().into());
        }
        if let Some(n) = o.max_global_streams_per_user {
            m.insert("max_global_streams_per_user".into(), n.to_string().into());
        }
        ov.insert(tenant.clone().into(), Value::Mapping(m));
    }
    map.insert("overrides".into(), Value::Mapping(ov));
    let body = serde_yaml::to_string(&Value::Mapping(map)).expect("YAML of strings");
    format!("# runakefli serve --print-config; load with --config-file\n{body}")
}

fn rule_yaml(r: &RetentionStream) -> Value {
    let mut m = Mapping::new();
    m.insert("selector".into(), r.selector.clone().into());
    m.insert("priority".into(), Value::Number(r.priority.into()));
    m.insert("period".into(), format_duration(r.period).into());
    Value::Mapping(m)
}

/// Numbers and booleans stay unquoted; everything else is a string.
fn yaml_scalar(s: &str) -> Value {
    match s {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        _ => match s.parse::<u64>() {
            Ok(n) => Value::Number(n.into()),
            Err(_) => Value::String(s.to_string()),
        },
    }
}
