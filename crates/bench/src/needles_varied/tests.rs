use super::*;

fn config(shape: Shape, seed: u64, lines: u64) -> GeneratorConfig {
    GeneratorConfig::ending_at(
        seed,
        300,
        lines,
        1_790_812_800_000_000_000,
        GeneratorConfig::HOUR_NS,
    )
    .with_shape(shape)
}

fn window(c: &GeneratorConfig) -> (i64, i64) {
    (c.start_ns, c.start_ns + c.span_ns)
}

fn lines_of(c: &GeneratorConfig, n: u64) -> Vec<String> {
    Generator::new(c.clone())
        .unwrap()
        .take(n as usize)
        .map(|g| g.line)
        .collect()
}

fn count(lines: &[String], needle: &str) -> u64 {
    lines.iter().filter(|l| l.contains(needle)).count() as u64
}

#[test]
fn varied_needles_cover_every_kind_with_exact_counts() {
    let n = 20_000;
    let c = config(Shape::Varied, 5, n);
    let (s, e) = window(&c);
    let set = find_needle_set(&c, n, s, e).unwrap();
    assert_eq!(set.lines_scanned, n);
    let kinds: Vec<NeedleKind> = set.needles.iter().map(|n| n.kind).collect();
    assert_eq!(kinds, NeedleKind::ALL);
    let lines = lines_of(&c, n);
    for needle in &set.needles {
        assert_eq!(
            count(&lines, &needle.value),
            needle.lines,
            "{:?} {}",
            needle.kind,
            needle.value
        );
        assert!(needle.lines >= 1);
        if needle.kind != NeedleKind::Ipv4 {
            assert!(needle.lines <= MAX_LINES, "{needle:?}");
        }
    }
    let json_uid = set.get(NeedleKind::UidJson).unwrap();
    let plain_uid = set.get(NeedleKind::UidPlain).unwrap();
    assert_ne!(json_uid.value, plain_uid.value);
    assert!(lines
        .iter()
        .any(|l| l.starts_with('{') && l.contains(&format!("\"uid\":\"{}\"", json_uid.value))));
    assert!(lines
        .iter()
        .any(|l| !l.starts_with('{') && l.contains(&format!(" uid={} ", plain_uid.value))));
    let order = set.get(NeedleKind::OrderNo).unwrap();
    assert!(order.value.bytes().all(|b| b.is_ascii_digit()) && order.value.len() >= 13);
    assert!(set.get(NeedleKind::Email).unwrap().value.contains('@'));
    assert_eq!(set.get(NeedleKind::Uuid).unwrap().value.len(), 36);
    assert_eq!(set.get(NeedleKind::Trace).unwrap().value.len(), 32);
    for counted in [
        &set.phrase2,
        set.phrase3.as_ref().unwrap(),
        &set.common_word,
        &set.error_word,
    ] {
        assert_eq!(count(&lines, &counted.text), counted.lines, "{counted:?}");
        assert!(counted.lines > 0);
    }
    assert_eq!(set.phrase2.text, PHRASE2);
    assert_eq!(set.phrase3.as_ref().unwrap().text, PHRASE3);
}

#[test]
fn same_seed_same_needles_other_seed_others() {
    let n = 8_000;
    let c = config(Shape::Varied, 3, n);
    let (s, e) = window(&c);
    let a = find_needle_set(&c, n, s, e).unwrap();
    assert_eq!(a, find_needle_set(&c, n, s, e).unwrap());
    let b = find_needle_set(&config(Shape::Varied, 4, n), n, s, e).unwrap();
    assert_ne!(a.needles, b.needles);
}

#[test]
fn reference_shape_has_its_four_kinds() {
    let n = 10_000;
    let c = config(Shape::Reference, 1, n);
    let (s, e) = window(&c);
    let set = find_needle_set(&c, n, s, e).unwrap();
    let kinds: Vec<NeedleKind> = set.needles.iter().map(|n| n.kind).collect();
    assert_eq!(
        kinds,
        [
            NeedleKind::UidJson,
            NeedleKind::Ipv4,
            NeedleKind::Uuid,
            NeedleKind::Trace
        ]
    );
    assert!(set
        .get(NeedleKind::UidJson)
        .unwrap()
        .value
        .starts_with("usr_"));
    assert!(set.phrase3.is_none());
    assert_eq!(set.phrase2.text, vocab::PHRASE);
    let lines = lines_of(&c, n);
    for needle in &set.needles {
        assert_eq!(count(&lines, &needle.value), needle.lines, "{needle:?}");
    }
    assert_eq!(count(&lines, vocab::PHRASE), set.phrase2.lines);
    assert_eq!(count(&lines, vocab::COMMON_WORD), set.common_word.lines);
}

#[test]
fn only_the_window_is_counted() {
    let n = 6_000;
    let c = config(Shape::Varied, 2, n);
    let half = c.start_ns + c.span_ns / 2;
    let set = find_needle_set(&c, n, half, c.start_ns + c.span_ns).unwrap();
    assert!(set.lines_scanned > 2_500 && set.lines_scanned < 3_500);
    let in_window: Vec<String> = Generator::new(c.clone())
        .unwrap()
        .take(n as usize)
        .filter(|g| g.ts >= half)
        .map(|g| g.line)
        .collect();
    for needle in &set.needles {
        assert_eq!(count(&in_window, &needle.value), needle.lines, "{needle:?}");
    }
    assert!(find_needle_set(&config(Shape::Varied, 2, 100), 100, 0, 1).is_err());
}

#[test]
fn extracts_ids_from_both_line_kinds() {
    let json = r#"{"uid":"k3x9q2m","order_no":4829301827364,"sku":"AB-48213-XQ"}"#;
    assert_eq!(extract(json, "\"uid\":\"", End::Quote), Some("k3x9q2m"));
    assert_eq!(
        extract(json, "\"order_no\":", End::Number),
        Some("4829301827364")
    );
    let plain = "2026-10-01T00:00:00.123Z INFO  [pool-3-thread-7] c.s.p.PaymentService - payment captured uid=k3x9q2m ip=10.3.44.2 took=12.300ms";
    assert_eq!(extract(plain, " uid=", End::Space), Some("k3x9q2m"));
    assert_eq!(extract(plain, " took=", End::Space), Some("12.300ms"));
    assert_eq!(extract(plain, " trace=", End::Space), None);
}

#[test]
fn sketch_keeps_exact_counts_of_the_smallest_hashes() {
    let mut sk = Sketch::default();
    let values: Vec<String> = (0..(SKETCH as u64 * 3)).map(|i| format!("v{i}")).collect();
    for round in 0..3 {
        for (i, v) in values.iter().enumerate() {
            if i % 3 >= round {
                sk.add(v, round == 2);
            }
        }
    }
    assert_eq!(sk.0.len(), SKETCH);
    let mut hashes: Vec<u64> = values.iter().map(|v| hash(v)).collect();
    hashes.sort_unstable();
    assert_eq!(sk.0.keys().copied().collect::<Vec<_>>(), hashes[..SKETCH]);
    for s in sk.0.values() {
        let i: usize = s.value[1..].parse().unwrap();
        assert_eq!(s.total(), 1 + (i % 3) as u64, "{}", s.value);
        assert_eq!(s.plain, u64::from(i % 3 == 2));
    }
}
