//! `service_name` discovery: the stream label Loki adds when a stream has
//! none (`limits_config.discover_service_name`). Always applied to OTLP (as
//! Loki does by default); applied to Loki pushes when
//! [`crate::PushLimits::discover_service_name`] is set.

/// Stream labels `service_name` is copied from when it is missing (Loki's
/// default list): the first of these present with a value wins.
pub const SERVICE_NAME_SOURCES: &[&str] = &[
    "service",
    "app",
    "application",
    "app_name",
    "name",
    "app_kubernetes_io_name",
    "container",
    "container_name",
    "k8s_container_name",
    "component",
    "workload",
    "job",
    "k8s_job_name",
];

/// Value of `service_name` when nothing names the service.
pub const UNKNOWN_SERVICE: &str = "unknown_service";

/// The label name.
pub const SERVICE_NAME: &str = "service_name";

/// Loki's marker of its own aggregated-metric streams, which are left alone.
const AGGREGATED_METRIC: &str = "__aggregated_metric__";

/// Sets `service_name` in `pairs` (unsorted label pairs) unless a non-empty
/// one is there: from the first label of [`SERVICE_NAME_SOURCES`] present,
/// else [`UNKNOWN_SERVICE`].
pub fn discover_service_name(pairs: &mut Vec<(String, String)>) {
    let has = |name: &str| pairs.iter().any(|(k, v)| k == name && !v.is_empty());
    if has(SERVICE_NAME) || has(AGGREGATED_METRIC) {
        return;
    }
    let found = SERVICE_NAME_SOURCES
        .iter()
        .find_map(|src| {
            pairs
                .iter()
                .find(|(k, v)| k == src && !v.is_empty())
                .map(|(_, v)| v.clone())
        })
        .unwrap_or_else(|| UNKNOWN_SERVICE.to_string());
    pairs.retain(|(k, _)| k != SERVICE_NAME);
    pairs.push((SERVICE_NAME.to_string(), found));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn list_order_decides() {
        let mut p = pairs(&[
            ("k8s_job_name", "nightly"),
            ("app", "api"),
            ("service_name", ""),
        ]);
        discover_service_name(&mut p);
        assert_eq!(
            p,
            pairs(&[
                ("k8s_job_name", "nightly"),
                ("app", "api"),
                ("service_name", "api")
            ])
        );
        let mut p = pairs(&[("env", "prod")]);
        discover_service_name(&mut p);
        assert_eq!(p.last().unwrap().1, UNKNOWN_SERVICE);
        let mut p = pairs(&[("service_name", "x"), ("app", "y")]);
        discover_service_name(&mut p);
        assert_eq!(p, pairs(&[("service_name", "x"), ("app", "y")]));
    }
}
