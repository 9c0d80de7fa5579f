use super::varied::{ERROR_WORD, PHRASE2, PHRASE3};
use super::*;
use crate::vocab::COMMON_WORD;

fn varied(seed: u64, lines: u64) -> GeneratorConfig {
    GeneratorConfig::ending_at(
        seed,
        200,
        lines,
        1_790_812_800_000_000_000,
        GeneratorConfig::HOUR_NS,
    )
    .with_shape(Shape::Varied)
}

fn bytes_of(config: GeneratorConfig, n: u64) -> Vec<u8> {
    let mut out = Vec::new();
    generate(config, n, OutputFormat::Record, &mut out).unwrap();
    out
}

#[test]
fn varied_is_deterministic_per_seed_and_differs_from_reference() {
    let a = bytes_of(varied(42, 5_000), 500);
    assert_eq!(a, bytes_of(varied(42, 5_000), 500));
    assert_ne!(a, bytes_of(varied(43, 5_000), 500));
    let reference = GeneratorConfig {
        shape: Shape::Reference,
        ..varied(42, 5_000)
    };
    assert_ne!(a, bytes_of(reference, 500));
}

#[test]
fn shape_serializes_snake_case_and_defaults_to_reference() {
    assert_eq!(GeneratorConfig::default().shape, Shape::Reference);
    assert_eq!(serde_json::to_string(&Shape::Varied).unwrap(), "\"varied\"");
    let s: Shape = serde_json::from_str("\"reference\"").unwrap();
    assert_eq!(s, Shape::Reference);
    assert_eq!(Shape::Varied.name(), "varied");
}

#[test]
fn same_streams_and_times_as_the_reference_shape() {
    let v = Generator::new(varied(9, 2_000)).unwrap();
    let r = Generator::new(varied(9, 2_000).with_shape(Shape::Reference)).unwrap();
    assert_eq!(v.stream_count(), r.stream_count());
    for i in 0..v.stream_count() {
        assert_eq!(v.stream_labels(i), r.stream_labels(i));
    }
    let cfg = varied(11, 3_000);
    let mut g = Generator::new(cfg.clone()).unwrap();
    let lines = g.fill_batch(3_000);
    let mut last = vec![i64::MIN; g.stream_count()];
    for l in &lines {
        assert!(l.ts > last[l.stream], "stream {} not increasing", l.stream);
        last[l.stream] = l.ts;
        assert!(l.ts >= cfg.start_ns && l.ts < cfg.start_ns + cfg.span_ns);
        // The line's timestamp is the entry time truncated to milliseconds.
        let mut ts = String::new();
        crate::text::push_rfc3339_ms(&mut ts, l.ts);
        if l.line.starts_with('{') {
            assert!(
                l.line.starts_with(&format!("{{\"ts\":\"{ts}\",")),
                "{}",
                l.line
            );
        } else {
            assert!(l.line.starts_with(&format!("{ts} ")), "{}", l.line);
        }
    }
}

#[test]
fn json_lines_have_their_own_fields_and_plain_streams_exist() {
    let mut g = Generator::new(varied(7, 5_000)).unwrap();
    let lines = g.fill_batch(5_000);
    let (mut json, mut plain, mut json_bytes) = (0usize, 0usize, 0usize);
    let mut plain_streams = std::collections::HashSet::new();
    let mut fields_total = 0u64;
    for l in &lines {
        let full: serde_json::Value = serde_json::from_str(&g.full_object(l)).unwrap();
        let full = full.as_object().unwrap();
        assert_eq!(full["app"].as_str(), g.stream_labels(l.stream).get("app"));
        fields_total += full.len() as u64;
        if !l.line.starts_with('{') {
            plain += 1;
            plain_streams.insert(l.stream);
            assert!(serde_json::from_str::<serde_json::Value>(&l.line).is_err());
            for key in [
                " uid=",
                " session=",
                " account=",
                " ip=",
                " order=",
                " sku=",
                " req=",
            ] {
                assert!(l.line.contains(key), "{key} missing from {}", l.line);
            }
            assert_eq!(full["message"].as_str(), Some(l.line.as_str()));
            continue;
        }
        json += 1;
        json_bytes += l.line.len();
        let v: serde_json::Value = serde_json::from_str(&l.line).unwrap();
        let obj = v.as_object().unwrap();
        assert!((25..=35).contains(&obj.len()), "{} fields", obj.len());
        for key in [
            "timestamp",
            "level",
            "msg",
            "user_id",
            "request_id",
            "trace_id",
        ] {
            assert!(
                !obj.contains_key(key),
                "reference field {key} in {}",
                l.line
            );
        }
        let keys: Vec<&str> = obj.keys().take(5).map(String::as_str).collect();
        assert_eq!(keys, ["ts", "severity", "logger", "thread", "message"]);
        assert!(obj["order_no"].is_u64());
        assert!(obj["latency_ms"].is_f64());
        assert_eq!(obj["req_id"].as_str().unwrap().len(), 36);
        assert_eq!(obj["uid"].as_str().unwrap().len(), 7);
        assert!(obj["account"].as_str().unwrap().contains('@'));
        if let Some(t) = obj.get("trace") {
            assert_eq!(t.as_str().unwrap().len(), 32);
        }
        let severity = obj["severity"].as_str().unwrap();
        assert!(["INFO", "WARN", "ERROR", "DEBUG"].contains(&severity));
        assert_eq!(
            l.line.contains(ERROR_WORD),
            severity == "ERROR",
            "{}",
            l.line
        );
    }
    let share = plain as f64 / lines.len() as f64;
    assert!((0.1..0.3).contains(&share), "plain share {share}");
    assert!(
        plain_streams.len() > 20,
        "{} plain streams",
        plain_streams.len()
    );
    let avg = json_bytes as f64 / json as f64;
    assert!(
        (600.0..900.0).contains(&avg),
        "average JSON line {avg} bytes"
    );
    assert_eq!(g.stats().fields, fields_total);
    assert_eq!(g.stats().lines, 5_000);
    assert!(g.stats().floor_bytes_per_line() > 20.0);
    assert!(g.stats().floor_bytes_per_line() < g.stats().avg_line_bytes());
}

#[test]
fn varied_frequencies_match_the_description() {
    let mut g = Generator::new(varied(3, 40_000)).unwrap();
    let lines = g.fill_batch(40_000);
    let n = lines.len() as f64;
    let frac =
        |pred: &dyn Fn(&GeneratedLine) -> bool| lines.iter().filter(|l| pred(l)).count() as f64 / n;
    let word = frac(&|l| l.line.contains(COMMON_WORD));
    assert!((0.65..0.78).contains(&word), "common word in {word}");
    let p2 = frac(&|l| l.line.contains(PHRASE2));
    assert!((0.007..0.013).contains(&p2), "two-word phrase in {p2}");
    let p3 = frac(&|l| l.line.contains(PHRASE3));
    assert!((0.003..0.007).contains(&p3), "three-word phrase in {p3}");
    let errors = frac(&|l| l.line.contains(ERROR_WORD));
    assert!((0.02..0.04).contains(&errors), "errors in {errors}");
    let traced = frac(&|l| l.line.contains("\"trace\":") || l.line.contains(" trace="));
    assert!((0.45..0.55).contains(&traced), "traced {traced}");
}

#[test]
fn object_format_of_varied_lines() {
    let mut out = Vec::new();
    let stats = generate(varied(2, 1_000), 300, OutputFormat::Object, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert_eq!(stats.object_bytes as usize + 300, text.len());
    for l in text.lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        assert!(v.get("namespace").is_some() && v.get("ts").is_some());
    }
}
