use super::*;
use crate::vocab::{COMMON_WORD, PHRASE};

fn small(seed: u64) -> GeneratorConfig {
    GeneratorConfig::ending_at(
        seed,
        200,
        5_000,
        1_790_812_800_000_000_000,
        GeneratorConfig::HOUR_NS,
    )
}

fn bytes_of(config: GeneratorConfig, n: u64) -> Vec<u8> {
    let mut out = Vec::new();
    generate(config, n, OutputFormat::Record, &mut out).unwrap();
    out
}

#[test]
fn same_seed_same_bytes_other_seed_differs() {
    let a = bytes_of(small(42), 500);
    let b = bytes_of(small(42), 500);
    let c = bytes_of(small(43), 500);
    assert_eq!(a, b);
    assert_ne!(a, c);
}

#[test]
fn rejects_bad_configs() {
    assert!(Generator::new(GeneratorConfig {
        streams: 0,
        ..small(1)
    })
    .is_err());
    assert!(Generator::new(GeneratorConfig {
        lines: 0,
        ..small(1)
    })
    .is_err());
    assert!(Generator::new(GeneratorConfig {
        span_ns: 0,
        ..small(1)
    })
    .is_err());
}

#[test]
fn lines_are_json_objects_of_the_reference_shape() {
    let mut g = Generator::new(small(7)).unwrap();
    let lines = g.fill_batch(3_000);
    let mut fields_total = 0usize;
    for l in &lines {
        let v: serde_json::Value = serde_json::from_str(&l.line).unwrap();
        let obj = v.as_object().unwrap();
        for label in ["namespace", "pod", "container", "node", "app"] {
            assert!(
                !obj.contains_key(label),
                "label {label} must not be in the line"
            );
        }
        let full: serde_json::Value = serde_json::from_str(&g.full_object(l)).unwrap();
        let full = full.as_object().unwrap();
        assert_eq!(full.len(), obj.len() + 5);
        assert!((30..=40).contains(&full.len()), "{} fields", full.len());
        fields_total += full.len();
        let labels = g.stream_labels(l.stream);
        assert_eq!(full["app"].as_str(), labels.get("app"));
        assert_eq!(full["pod"].as_str(), labels.get("pod"));
        // The JSON timestamp is the entry time truncated to milliseconds.
        let mut ts = String::new();
        crate::text::push_rfc3339_ms(&mut ts, l.ts);
        assert_eq!(obj["timestamp"].as_str(), Some(ts.as_str()));
        let d = obj["duration_ms"].as_f64().unwrap();
        assert!(d > 0.0);
        assert_eq!(obj["request_id"].as_str().unwrap().len(), 36);
        if let Some(t) = obj.get("trace_id") {
            assert_eq!(t.as_str().unwrap().len(), 32);
            assert_eq!(obj["span_id"].as_str().unwrap().len(), 16);
        }
    }
    assert_eq!(g.stats().fields, fields_total as u64);
    let avg = g.stats().avg_object_bytes();
    assert!((850.0..1000.0).contains(&avg), "average object size {avg}");
    assert!(g.stats().avg_line_bytes() < avg);
}

#[test]
fn value_frequencies_match_the_workload() {
    let mut g = Generator::new(GeneratorConfig {
        lines: 20_000,
        ..small(3)
    })
    .unwrap();
    let lines = g.fill_batch(20_000);
    let n = lines.len() as f64;
    let frac =
        |pred: &dyn Fn(&GeneratedLine) -> bool| lines.iter().filter(|l| pred(l)).count() as f64 / n;
    let word = frac(&|l| l.line.contains(COMMON_WORD));
    assert!((0.6..0.95).contains(&word), "common word in {word}");
    let phrase = frac(&|l| l.line.contains(PHRASE));
    assert!((0.006..0.015).contains(&phrase), "phrase in {phrase}");
    let errors = frac(&|l| l.line.contains("\"level\":\"error\""));
    assert!((0.01..0.03).contains(&errors), "errors {errors}");
    let traced = frac(&|l| l.line.contains("\"trace_id\""));
    assert!((0.45..0.55).contains(&traced), "traced {traced}");
    let request_ids: std::collections::HashSet<&str> = lines
        .iter()
        .map(|l| &l.line[l.line.find("\"request_id\"").unwrap()..][14..50])
        .collect();
    assert_eq!(request_ids.len(), lines.len());
    let paths: std::collections::HashSet<String> = lines
        .iter()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(&l.line).unwrap()["path"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert!(
        (150..=420).contains(&paths.len()),
        "{} distinct paths",
        paths.len()
    );
    let apps: std::collections::HashSet<&str> =
        (0..g.stream_count()).map(|i| g.stream_app(i)).collect();
    assert!(apps.len() >= 40, "{} apps", apps.len());
    assert!(apps.contains(g.busiest_app()));
}

#[test]
fn timestamps_cover_the_span_and_increase_per_stream() {
    let cfg = small(11);
    let mut g = Generator::new(cfg.clone()).unwrap();
    let lines = g.fill_batch(cfg.lines as usize);
    let mut last = vec![i64::MIN; g.stream_count()];
    for l in &lines {
        assert!(l.ts > last[l.stream], "stream {} not increasing", l.stream);
        last[l.stream] = l.ts;
        assert!(l.ts >= cfg.start_ns && l.ts < cfg.start_ns + cfg.span_ns);
    }
    assert!(lines.last().unwrap().ts > cfg.start_ns + cfg.span_ns - cfg.span_ns / 100);
}

#[test]
fn floor_is_positive_below_raw_size_and_stable() {
    let mut g = Generator::new(GeneratorConfig {
        lines: 20_000,
        ..small(5)
    })
    .unwrap();
    g.fill_batch(10_000);
    let first = g.stats().line_floor_bits / 10_000.0;
    g.fill_batch(10_000);
    let s = g.stats().clone();
    let second = (s.line_floor_bits - first * 10_000.0) / 10_000.0;
    assert!(
        s.floor_bytes_per_line() > 20.0,
        "{}",
        s.floor_bytes_per_line()
    );
    assert!(s.floor_bytes_per_line() < s.avg_line_bytes() / 5.0);
    // Per-line information changes little between halves (first sightings of users fade).
    assert!((first - second).abs() / first < 0.15, "{first} vs {second}");
    // Same seed, same floor.
    let mut h = Generator::new(GeneratorConfig {
        lines: 20_000,
        ..small(5)
    })
    .unwrap();
    h.fill_batch(20_000);
    assert_eq!(h.floor_bits(), g.floor_bits());
}

#[test]
fn object_format_writes_whole_objects() {
    let mut out = Vec::new();
    let stats = generate(small(2), 50, OutputFormat::Object, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert_eq!(text.lines().count(), 50);
    assert_eq!(stats.object_bytes as usize + 50, text.len());
    for l in text.lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        assert!(v.get("namespace").is_some() && v.get("msg").is_some());
    }
}
