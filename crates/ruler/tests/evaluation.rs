//! The ruler's threads with a stand-in query path: groups run at their own
//! intervals, a slow group delays no other and counts the evaluations it
//! missed, and a reload keeps unchanged groups and the alerts of changed ones.

use runakefli_logql::Expr;
use runakefli_model::TenantId;
use runakefli_ruler::alert::{AlertState, Series};
use runakefli_ruler::{Config, Querier, Ruler};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Answers every query with one series of value 1; queries whose text
/// selects `app="slow"` take 2.5 s.
struct Stand;

impl Querier for Stand {
    fn instant(&self, _: &TenantId, expr: &Expr, _: i64) -> Result<Vec<Series>, String> {
        if expr.to_string().contains("slow") {
            std::thread::sleep(Duration::from_millis(2500));
        }
        Ok(vec![([("app".to_string(), "x".to_string())].into(), 1.0)])
    }
}

fn write(dir: &std::path::Path, ns: &str, text: &str) {
    std::fs::create_dir_all(dir.join("fake")).expect("mkdir");
    std::fs::write(dir.join("fake").join(format!("{ns}.yaml")), text).expect("write");
}

const FAST: &str = "groups:\n  - name: fast\n    interval: 500ms\n    rules:\n      - alert: Up\n        expr: sum by (app) (count_over_time({app=\"x\"}[1m])) > 0\n        for: 1m\n";
const SLOW: &str = "groups:\n  - name: slow\n    interval: 1s\n    rules:\n      - record: slow:count\n        expr: sum(count_over_time({app=\"slow\"}[1m]))\n";

#[test]
fn a_slow_group_delays_no_other_and_counts_what_it_missed() {
    let tmp = tempfile::tempdir().expect("tempdir");
    write(tmp.path(), "a", FAST);
    write(tmp.path(), "b", SLOW);
    let mut config = Config::new(tmp.path().to_path_buf());
    config.poll_interval = Duration::from_secs(3600);
    let ruler = Ruler::start(config, Arc::new(Stand), Default::default()).expect("starts");
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_millis(5200));
    let m = ruler.metrics();
    let fast = m.figures("fake", "a;fast").expect("fast group figures");
    let slow = m.figures("fake", "b;slow").expect("slow group figures");
    let secs = t0.elapsed().as_secs_f64();
    // Every 500 ms for ~5 s, while the slow group takes 2.5 s a run.
    assert!(fast.evaluations >= 8, "{fast:?} in {secs} s");
    assert_eq!(fast.missed, 0, "{fast:?}");
    assert!(slow.evaluations >= 1 && slow.evaluations <= 2, "{slow:?}");
    assert!(slow.missed >= 1, "{slow:?}");
    assert!(slow.last_duration_secs >= 2.4, "{slow:?}");
    ruler.stop();
}

#[test]
fn a_reload_keeps_the_alerts_of_a_changed_group() {
    let tmp = tempfile::tempdir().expect("tempdir");
    write(tmp.path(), "a", FAST);
    let mut config = Config::new(tmp.path().to_path_buf());
    config.poll_interval = Duration::from_secs(3600);
    let ruler = Ruler::start(config, Arc::new(Stand), Default::default()).expect("starts");
    let pending_since = |r: &Ruler| -> Option<i64> {
        let g = r.groups("fake");
        let status = g.first()?.status.lock().clone();
        let a = status.rules.first()?.alerts.active().next()?.clone();
        assert_eq!(a.state, AlertState::Pending);
        Some(a.active_at_ns)
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    let first = loop {
        if let Some(t) = pending_since(&ruler) {
            break t;
        }
        assert!(Instant::now() < deadline, "no pending alert");
        std::thread::sleep(Duration::from_millis(50));
    };
    // Same rule, new label on the group: the group restarts, the alert stays.
    write(
        tmp.path(),
        "a",
        &FAST.replace(
            "        for: 1m\n",
            "        for: 1m\n        labels: {severity: page}\n",
        ),
    );
    assert!(ruler.reload().is_empty());
    let g = ruler.groups("fake");
    assert_eq!(g[0].compiled.rules[0].rule.labels["severity"], "page");
    assert_eq!(pending_since(&ruler), Some(first));
    // A broken file keeps what the namespace had.
    write(
        tmp.path(),
        "a",
        "groups: [{name: fast, rules: [{alert: A, expr: 'nope('}]}]\n",
    );
    let problems = ruler.reload();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].contains("could not parse expression"),
        "{problems:?}"
    );
    assert_eq!(ruler.groups("fake").len(), 1);
    ruler.stop();
}

#[test]
fn pending_alerts_keep_their_start_across_a_restart() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let rules = tmp.path().join("rules");
    write(&rules, "a", FAST);
    let config = || {
        let mut c = Config::new(rules.clone());
        c.poll_interval = Duration::from_secs(3600);
        c.state_dir = Some(tmp.path().join("state"));
        c
    };
    let active_at = |r: &Ruler| -> Option<i64> {
        let g = r.groups("fake");
        let status = g.first()?.status.lock().clone();
        let a = status.rules.first()?.alerts.active().next()?.clone();
        assert_eq!(a.state, AlertState::Pending);
        Some(a.active_at_ns)
    };
    let ruler = Ruler::start(config(), Arc::new(Stand), Default::default()).expect("starts");
    let deadline = Instant::now() + Duration::from_secs(5);
    let first = loop {
        if let Some(t) = active_at(&ruler) {
            break t;
        }
        assert!(Instant::now() < deadline, "no pending alert");
        std::thread::sleep(Duration::from_millis(50));
    };
    ruler.stop();
    drop(ruler);
    let again = Ruler::start(config(), Arc::new(Stand), Default::default()).expect("starts");
    // Restored before the first evaluation, and kept by it.
    assert_eq!(active_at(&again), Some(first));
    std::thread::sleep(Duration::from_millis(1200));
    assert_eq!(active_at(&again), Some(first));
    again.stop();
}
